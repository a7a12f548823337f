//! Core lists as Linux and Docker write them (`0-2,4`): parsed, checked against the
//! cores this machine has, and written back. Used by `[stack] cpus` and the stack.

use std::fmt;

/// A set of logical CPUs, in ascending order without repeats.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CpuSet(Vec<usize>);

impl CpuSet {
    /// Parses `0`, `0,2`, `1-3`, `0-1,4`; spaces around items are allowed.
    pub fn parse(text: &str) -> Result<CpuSet, String> {
        let mut cores = Vec::new();
        for item in text.split(',').map(str::trim) {
            if item.is_empty() {
                return Err(format!(
                    "{text:?} is not a core list; write it like 0, 0,2 or 1-3"
                ));
            }
            let bad = || format!("{item:?} in {text:?} is not a core number or a range like 1-3");
            match item.split_once('-') {
                Some((first, last)) => {
                    let first: usize = first.trim().parse().map_err(|_| bad())?;
                    let last: usize = last.trim().parse().map_err(|_| bad())?;
                    if last < first {
                        return Err(format!(
                            "{item:?} in {text:?} runs backwards; write {last}-{first}"
                        ));
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
    pub fn check_within(&self, online: &CpuSet) -> Result<(), String> {
        let missing: Vec<String> = self
            .0
            .iter()
            .filter(|c| !online.0.contains(c))
            .map(|c| c.to_string())
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        Err(format!(
            "this machine has no core {}; its cores are {online}",
            missing.join(", ")
        ))
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
            let err = CpuSet::parse(bad).unwrap_err();
            assert!(
                err.contains(bad) || err.contains("core list"),
                "{bad}: {err}"
            );
        }
        assert!(CpuSet::parse("3-1").unwrap_err().contains("1-3"));
    }

    #[test]
    fn cores_the_machine_lacks_are_named() {
        let online = CpuSet::parse("0-1").unwrap();
        assert!(CpuSet::parse("1").unwrap().check_within(&online).is_ok());
        let err = CpuSet::parse("1,7")
            .unwrap()
            .check_within(&online)
            .unwrap_err();
        assert_eq!(err, "this machine has no core 7; its cores are 0-1");
    }
}
