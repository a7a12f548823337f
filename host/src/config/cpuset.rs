//! Core lists as Linux and Docker write them (`0-2,4`): parsed, checked against the
//! cores this machine has, and written back. Used by `[stack] cpus` and the stack.

use std::fmt;

/// Why a core list is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CpuSetError {
    /// An empty list or an empty item.
    #[error("{0:?} is not a core list; write it like 0, 0,2 or 1-3")]
    NotAList(String),
    /// An item that is neither a number nor a range.
    #[error("{item:?} in {list:?} is not a core number or a range like 1-3")]
    Item {
        /// The item.
        item: String,
        /// The whole list.
        list: String,
    },
    /// A range written high to low.
    #[error("{item:?} in {list:?} runs backwards; write {last}-{first}")]
    Backwards {
        /// The item.
        item: String,
        /// The whole list.
        list: String,
        /// The range's first number as written.
        first: usize,
        /// The range's last number as written.
        last: usize,
    },
    /// Cores the machine does not have.
    #[error("this machine has no core {}; its cores are {online}", Joined(.missing))]
    Missing {
        /// The cores asked for that are not online.
        missing: Vec<usize>,
        /// The cores that are.
        online: CpuSet,
    },
}

impl From<CpuSetError> for String {
    /// The message a `[stack] cpus` entry's config error carries.
    fn from(e: CpuSetError) -> Self {
        e.to_string()
    }
}

/// Numbers separated by `, `.
struct Joined<'a>(&'a [usize]);

impl fmt::Display for Joined<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, n) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{n}")?;
        }
        Ok(())
    }
}

/// A set of logical CPUs, in ascending order without repeats.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CpuSet(Vec<usize>);

impl CpuSet {
    /// Parses `0`, `0,2`, `1-3`, `0-1,4`; spaces around items are allowed.
    pub fn parse(text: &str) -> Result<CpuSet, CpuSetError> {
        let mut cores = Vec::new();
        for item in text.split(',').map(str::trim) {
            if item.is_empty() {
                return Err(CpuSetError::NotAList(text.to_owned()));
            }
            let bad = || CpuSetError::Item {
                item: item.to_owned(),
                list: text.to_owned(),
            };
            match item.split_once('-') {
                Some((first, last)) => {
                    let first: usize = first.trim().parse().map_err(|_| bad())?;
                    let last: usize = last.trim().parse().map_err(|_| bad())?;
                    if last < first {
                        return Err(CpuSetError::Backwards {
                            item: item.to_owned(),
                            list: text.to_owned(),
                            first,
                            last,
                        });
                    }
                    cores.extend(first..=last);
                }
                None => cores.push(item.parse().map_err(|_| bad())?),
            }
        }
        cores.sort_unstable();
        cores.dedup();
        Ok(CpuSet(cores))
    }

    /// The cores, ascending.
    pub fn cores(&self) -> &[usize] {
        &self.0
    }

    /// How many cores.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True for an empty set.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Refuses cores outside `online` (the machine's), naming the ones it has.
    pub fn check_within(&self, online: &CpuSet) -> Result<(), CpuSetError> {
        let missing: Vec<usize> = self
            .0
            .iter()
            .copied()
            .filter(|c| !online.0.contains(c))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        Err(CpuSetError::Missing {
            missing,
            online: online.clone(),
        })
    }

    /// The cores the kernel has online (`/sys/devices/system/cpu/online`), or
    /// `0..available_parallelism` where that file cannot be read.
    pub fn online() -> CpuSet {
        std::fs::read_to_string("/sys/devices/system/cpu/online")
            .ok()
            .and_then(|text| CpuSet::parse(text.trim()).ok())
            .unwrap_or_else(|| {
                let n = std::thread::available_parallelism().map_or(1, |n| n.get());
                CpuSet((0..n).collect())
            })
    }
}

impl fmt::Display for CpuSet {
    /// Writes ranges where cores run on (`0-2,5`), the form Docker's `cpuset` takes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut i = 0;
        let mut first = true;
        while i < self.0.len() {
            let start = self.0[i];
            let mut end = start;
            while i + 1 < self.0.len() && self.0[i + 1] == end + 1 {
                i += 1;
                end += 1;
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if end == start {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{end}")?;
            }
            i += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_ranges_parse_and_print_back_as_ranges() {
        let set = CpuSet::parse("4, 0-2,1").unwrap();
        assert_eq!(set.cores(), &[0, 1, 2, 4]);
        assert_eq!(set.to_string(), "0-2,4");
        assert_eq!(CpuSet::parse("3").unwrap().to_string(), "3");
    }

    #[test]
    fn bad_lists_say_how_to_write_one() {
        for bad in ["", "a", "1-", "3-1", "1,,2"] {
            let err = CpuSet::parse(bad).unwrap_err().to_string();
            assert!(
                err.contains(bad) || err.contains("core list"),
                "{bad}: {err}"
            );
        }
        assert_eq!(
            CpuSet::parse("3-1").unwrap_err().to_string(),
            "\"3-1\" in \"3-1\" runs backwards; write 1-3"
        );
        assert_eq!(
            CpuSet::parse("1,x").unwrap_err().to_string(),
            "\"x\" in \"1,x\" is not a core number or a range like 1-3"
        );
        assert_eq!(
            CpuSet::parse("1,,2").unwrap_err(),
            CpuSetError::NotAList("1,,2".into())
        );
    }

    #[test]
    fn cores_the_machine_lacks_are_named() {
        let online = CpuSet::parse("0-1").unwrap();
        assert!(CpuSet::parse("1").unwrap().check_within(&online).is_ok());
        let err = CpuSet::parse("1,7")
            .unwrap()
            .check_within(&online)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "this machine has no core 7; its cores are 0-1"
        );
        let err = CpuSet::parse("5,7")
            .unwrap()
            .check_within(&online)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "this machine has no core 5, 7; its cores are 0-1"
        );
    }
}
