//! What a file would lose in a crash: its undo log since its last fsync.
//!
//! Writes go straight to the backing file (so every reader sees them, as
//! through a page cache); before a page that was durable is first
//! overwritten or cut off, its durable bytes are saved. `fsync` forgets the
//! log (everything is durable now); `crash` writes the saved pages back and
//! cuts the file to its durable length: the file is what the last fsync
//! left, byte for byte.

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// Granularity of the undo log (a page of the page cache).
pub const PAGE: u64 = 4096;

/// One file's durable length and the durable bytes of the pages written since.
#[derive(Debug, Default)]
pub struct Undo {
    /// Length at the last fsync (0 for a file created since).
    pub synced_len: u64,
    /// Page index → its durable bytes (short for the page holding `synced_len`).
    saved: BTreeMap<u64, Vec<u8>>,
    /// Bytes written since the last fsync (what a crash may lose).
    pub unsynced_bytes: u64,
}

/// What one crash undid in one file.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Lost {
    /// Bytes written since the file's last fsync.
    pub unsynced_bytes: u64,
    /// Durable pages written back.
    pub pages_restored: u64,
    /// Length before → after.
    pub len_before: u64,
    /// The durable length the file was cut to.
    pub len_after: u64,
}

impl Undo {
    /// A file whose current content is durable (found at mount time).
    pub fn durable(len: u64) -> Undo {
        Undo { synced_len: len, ..Undo::default() }
    }

    /// Save the durable bytes of every page of `[from, to)` not saved yet.
    fn save(&mut self, f: &File, from: u64, to: u64) -> io::Result<()> {
        let to = to.min(self.synced_len);
        if from >= to {
            return Ok(());
        }
        for p in from / PAGE..to.div_ceil(PAGE) {
            if self.saved.contains_key(&p) {
                continue;
            }
            let start = p * PAGE;
            let len = (self.synced_len - start).min(PAGE) as usize;
            let mut buf = vec![0u8; len];
            let n = read_full(f, &mut buf, start)?;
            buf.truncate(n);
            self.saved.insert(p, buf);
        }
        Ok(())
    }

    /// Write `data` at `off`, saving what it overwrites first.
    pub fn write(&mut self, f: &File, off: u64, data: &[u8]) -> io::Result<()> {
        self.save(f, off, off + data.len() as u64)?;
        f.write_all_at(data, off)?;
        self.unsynced_bytes += data.len() as u64;
        Ok(())
    }

    /// Set the length to `len`, saving what a shrink cuts off first.
    pub fn truncate(&mut self, f: &File, len: u64) -> io::Result<()> {
        let cur = f.metadata()?.len();
        if len < cur {
            self.save(f, len, cur)?;
        }
        f.set_len(len)?;
        self.unsynced_bytes += cur.abs_diff(len);
        Ok(())
    }

    /// An fsync: everything written is durable.
    pub fn sync(&mut self, f: &File) -> io::Result<()> {
        self.synced_len = f.metadata()?.len();
        self.saved.clear();
        self.unsynced_bytes = 0;
        Ok(())
    }

    /// A crash: put back the durable pages, cut to the durable length.
    pub fn crash(&mut self, f: &File) -> io::Result<Lost> {
        let len_before = f.metadata()?.len();
        let lost = Lost {
            unsynced_bytes: self.unsynced_bytes,
            pages_restored: self.saved.len() as u64,
            len_before,
            len_after: self.synced_len,
        };
        for (p, bytes) in std::mem::take(&mut self.saved) {
            f.write_all_at(&bytes, p * PAGE)?;
        }
        f.set_len(self.synced_len)?;
        self.unsynced_bytes = 0;
        Ok(lost)
    }
}

/// Read up to `buf.len()` bytes at `off` (fewer at the end of the file).
pub fn read_full(f: &File, buf: &mut [u8], off: u64) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read_at(&mut buf[n..], off + n as u64)? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(dir: &tempfile::TempDir, content: &[u8]) -> File {
        let p = dir.path().join("f");
        std::fs::write(&p, content).unwrap();
        std::fs::OpenOptions::new().read(true).write(true).open(&p).unwrap()
    }

    fn all(f: &File) -> Vec<u8> {
        let mut b = vec![0u8; f.metadata().unwrap().len() as usize];
        read_full(f, &mut b, 0).unwrap();
        b
    }

    #[test]
    fn crash_restores_the_last_synced_content() {
        let d = tempfile::tempdir().unwrap();
        let base: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
        let f = file(&d, &base);
        let mut u = Undo::durable(base.len() as u64);
        u.write(&f, 4000, &[7; 300]).unwrap();
        u.write(&f, 9990, &[9; 5000]).unwrap(); // grows the file
        u.write(&f, 4100, &[8; 10]).unwrap(); // the page is saved once
        let lost = u.crash(&f).unwrap();
        assert_eq!(all(&f), base);
        assert_eq!(lost.len_after, 10_000);
        assert_eq!(lost.pages_restored, 3); // pages 0, 1 and 2
    }

    #[test]
    fn sync_makes_writes_survive_and_truncation_is_undone() {
        let d = tempfile::tempdir().unwrap();
        let f = file(&d, &[1; 8192]);
        let mut u = Undo::durable(8192);
        u.write(&f, 0, &[2; 100]).unwrap();
        u.sync(&f).unwrap();
        let kept = all(&f);
        u.truncate(&f, 10).unwrap();
        u.write(&f, 10, &[3; 20]).unwrap();
        u.crash(&f).unwrap();
        assert_eq!(all(&f), kept);
    }

    #[test]
    fn a_file_never_synced_comes_back_empty() {
        let d = tempfile::tempdir().unwrap();
        let f = file(&d, b"");
        let mut u = Undo::default();
        u.write(&f, 0, b"hello").unwrap();
        assert_eq!(u.crash(&f).unwrap().unsynced_bytes, 5);
        assert!(all(&f).is_empty());
    }
}
