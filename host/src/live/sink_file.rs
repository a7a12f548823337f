//! The file an output writes: buffered, gzipped when its name ends in `.gz`, flushed
//! every tick (a run killed mid-way keeps what was written) and finished on drop, so
//! every exit path leaves a readable file.

use flate2::write::GzEncoder;
use flate2::Compression;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// A plain or gzipped output file.
pub(crate) enum SinkFile {
    /// Written as is.
    Plain(BufWriter<File>),
    /// Gzipped; `None` once finished.
    Gzip(Option<GzEncoder<BufWriter<File>>>),
}

impl SinkFile {
    /// Creates (truncates) `path`; the parent folder must exist.
    pub(crate) fn create(path: &Path) -> io::Result<SinkFile> {
        let file = BufWriter::new(File::create(path)?);
        let gz = path.extension().is_some_and(|e| e == "gz");
        Ok(if gz {
            SinkFile::Gzip(Some(GzEncoder::new(file, Compression::fast())))
        } else {
            SinkFile::Plain(file)
        })
    }

    /// Pushes what is buffered to the file. A gzip stream is sync-flushed, so that what
    /// was written so far can be read back before the end.
    pub(crate) fn flush_tick(&mut self) -> io::Result<()> {
        self.flush()
    }

    /// Ends the gzip stream (its trailer) and flushes; writing after this is an error.
    pub(crate) fn finish(&mut self) -> io::Result<()> {
        match self {
            SinkFile::Plain(f) => f.flush(),
            SinkFile::Gzip(gz) => match gz.take() {
                Some(enc) => enc.finish()?.flush(),
                None => Ok(()),
            },
        }
    }
}

impl Write for SinkFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            SinkFile::Plain(f) => f.write(buf),
            SinkFile::Gzip(Some(gz)) => gz.write(buf),
            SinkFile::Gzip(None) => Err(io::Error::other("the output file is already finished")),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            SinkFile::Plain(f) => f.flush(),
            SinkFile::Gzip(Some(gz)) => gz.flush(),
            SinkFile::Gzip(None) => Ok(()),
        }
    }
}

impl Drop for SinkFile {
    fn drop(&mut self) {
        // An aborted run still leaves a complete file (gzip trailer included).
        let _ = self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn gz_names_are_gzipped_and_complete_after_drop() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.csv.gz");
        {
            let mut f = SinkFile::create(&path).unwrap();
            f.write_all(b"hello\n").unwrap();
            f.flush_tick().unwrap();
        }
        let mut text = String::new();
        flate2::read::GzDecoder::new(File::open(&path).unwrap())
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "hello\n");
        let plain = dir.path().join("a.csv");
        SinkFile::create(&plain).unwrap().write_all(b"x").unwrap();
        assert_eq!(std::fs::read_to_string(&plain).unwrap(), "x");
    }
}
