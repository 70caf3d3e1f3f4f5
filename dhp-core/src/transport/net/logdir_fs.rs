//! Opening files in the transport server's log directory without following
//! links.
//!
//! Whoever can create entries in LOGDIR must not be able to make the server
//! write elsewhere: a `<hid>.log` that is a symbolic link would get peer
//! lines appended to its target, and a link at the next journal name would
//! get its target truncated and overwritten at rotation. So every file the
//! server opens there is opened with `O_NOFOLLOW` (and `O_EXCL` where it is
//! created), and `O_NONBLOCK` (a FIFO planted there cannot block the
//! open); the handle is then checked to be a regular file. An entry that
//! is a link, or not a regular file, is refused with
//! [`TransportKind::Link`], never followed. The directory itself is the
//! operator's choice and may be reached through a link.

use crate::error::{Error, Result};
use crate::TransportKind;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The typed refusal of a LOGDIR entry that is a link (or not a file).
pub(crate) fn refused(path: &Path, what: &str) -> Error {
    Error::transport(
        TransportKind::Link,
        format!(
            "{} is {what}; the transport server reads and writes only regular files in its log directory \
             and follows no link there (remove it)",
            path.display()
        ),
    )
}

/// What an entry of LOGDIR is, without following it: `None` when it does
/// not exist, its metadata when it is a regular file, else refused.
pub(crate) fn entry(path: &Path) -> Result<Option<std::fs::Metadata>> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(refused(path, "a symbolic link")),
        Ok(m) if !m.is_file() => Err(refused(path, "not a regular file")),
        Ok(m) => Ok(Some(m)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Open `path` with `opts` plus `O_NOFOLLOW | O_NONBLOCK`; a link is
/// refused (also when `O_EXCL` found one at the name), and so is a handle
/// that is not a regular file.
pub(crate) fn open(opts: &mut OpenOptions, path: &Path) -> Result<File> {
    let f = match opts.custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK).open(path) {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(nix::libc::ELOOP) => return Err(refused(path, "a symbolic link")),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            // O_EXCL: say what is in the way if it is a link.
            entry(path)?;
            return Err(Error::io(path, e));
        }
        Err(e) => return Err(Error::io(path, e)),
    };
    let m = f.metadata().map_err(|e| Error::io(path, e))?;
    if !m.is_file() {
        return Err(refused(path, "not a regular file"));
    }
    Ok(f)
}

/// Open an existing entry for reading ([`open`]).
pub(crate) fn open_read(path: &Path) -> Result<File> {
    open(OpenOptions::new().read(true), path)
}

/// The whole content of an entry ([`open_read`]).
pub(crate) fn read(path: &Path) -> Result<Vec<u8>> {
    use std::io::Read;
    let mut f = open_read(path)?;
    let mut data = Vec::new();
    f.read_to_end(&mut data).map_err(|e| Error::io(path, e))?;
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_and_fifos_are_refused_regular_files_opened() {
        let d = tempfile::tempdir().unwrap();
        let target = d.path().join("target");
        std::fs::write(&target, b"keep").unwrap();
        let link = d.path().join("a.log");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        for r in [
            entry(&link).map(|_| ()),
            open(OpenOptions::new().create(true).append(true), &link).map(|_| ()),
            open(OpenOptions::new().create_new(true).write(true), &link).map(|_| ()),
            read(&link).map(|_| ()),
        ] {
            assert_eq!(r.unwrap_err().transport_kind(), Some(TransportKind::Link));
        }
        let fifo = d.path().join("b.log");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert_eq!(read(&fifo).unwrap_err().transport_kind(), Some(TransportKind::Link));
        assert_eq!(entry(&fifo).unwrap_err().transport_kind(), Some(TransportKind::Link));
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
        assert_eq!(read(&target).unwrap(), b"keep");
        assert!(entry(&d.path().join("none")).unwrap().is_none());
    }

    /// A link planted at the next journal name is refused at rotation:
    /// its target keeps its content, and the journal stops acknowledging.
    #[tokio::test]
    async fn rotation_refuses_a_link_at_the_next_journal_name() {
        use super::super::journal::{list, JournalHandle};
        let d = tempfile::tempdir().unwrap();
        let victim = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(victim.path(), b"precious").unwrap();
        let h = JournalHandle::start(d.path(), std::time::Duration::ZERO, 200).unwrap();
        let (gen, _) = list(d.path()).unwrap()[0].clone();
        let next = d.path().join(format!("journal-{:016}.dhpj", gen + 1));
        std::os::unix::fs::symlink(victim.path(), &next).unwrap();
        let hid = "e".repeat(64);
        let mut failed = None;
        for i in 0..200 {
            match h.journal.append(&hid, &format!("{{\"seq\": {i}}}")) {
                Ok(pos) => {
                    if let Err(e) = h.journal.wait(pos).await {
                        failed = Some(e);
                        break;
                    }
                }
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        let e = failed.expect("rotation through a link went on acknowledging");
        assert!(e.to_string().contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read(victim.path()).unwrap(), b"precious");
        assert!(std::fs::symlink_metadata(&next).unwrap().file_type().is_symlink());
        drop(h);
        // And a start that finds a link among the journals refuses it.
        assert_eq!(list(d.path()).unwrap_err().transport_kind(), Some(TransportKind::Link));
    }
}
