//! The FUSE side: one flat directory passed through to a backing directory,
//! every file with its [`Undo`] log. Namespace operations (create, unlink)
//! are durable at once; only file contents can be lost.

use super::undo::{read_full, Lost, Undo};
use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, LockOwner, OpenFlags,
    ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyWrite, Request,
    TimeOrNow, WriteFlags,
};
use std::collections::{BTreeMap, HashMap};
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Attributes and entries are never cached by the kernel: after a crash the
/// sizes change behind its back.
const TTL: Duration = Duration::ZERO;

/// One file: its backing handle and undo log.
#[derive(Debug)]
struct Node {
    name: OsString,
    file: File,
    undo: Undo,
    linked: bool,
}

/// The shared state of the file system (the session's thread and the harness).
#[derive(Debug, Default)]
pub(super) struct State {
    names: BTreeMap<OsString, u64>,
    nodes: HashMap<u64, Node>,
    next_ino: u64,
    /// fsync calls served (the store under test asked for durability).
    pub(super) fsyncs: u64,
}

/// The file system the session serves.
#[derive(Debug, Clone)]
pub(super) struct LazyFs {
    pub(super) backing: PathBuf,
    pub(super) state: Arc<Mutex<State>>,
}

fn attr(ino: u64, m: &std::fs::Metadata) -> FileAttr {
    let t = |s: i64| UNIX_EPOCH + Duration::from_secs(s.max(0) as u64);
    FileAttr {
        ino: INodeNo(ino),
        size: m.len(),
        blocks: m.len().div_ceil(512),
        atime: t(m.atime()),
        mtime: t(m.mtime()),
        ctime: t(m.ctime()),
        crtime: t(m.ctime()),
        kind: if m.is_dir() { FileType::Directory } else { FileType::RegularFile },
        perm: (m.mode() & 0o7777) as u16,
        nlink: if m.is_dir() { 2 } else { 1 },
        uid: m.uid(),
        gid: m.gid(),
        rdev: 0,
        flags: 0,
        blksize: 4096,
    }
}

impl LazyFs {
    pub(super) fn new(backing: PathBuf) -> LazyFs {
        let state = State { next_ino: 2, ..State::default() };
        LazyFs { backing, state: Arc::new(Mutex::new(state)) }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        // a panic while holding it leaves plain data: go on with it
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn open_backing(&self, name: &OsStr, create: Option<u32>) -> std::io::Result<File> {
        let mut o = std::fs::OpenOptions::new();
        o.read(true).write(true);
        if let Some(mode) = create {
            o.create(true).mode(mode);
        }
        o.open(self.backing.join(name))
    }

    /// The inode of `name`, adopting a backing file found there (durable as it is).
    fn find(&self, st: &mut State, name: &OsStr) -> Result<u64, Errno> {
        if let Some(&ino) = st.names.get(name) {
            return Ok(ino);
        }
        let file = self.open_backing(name, None)?;
        let len = file.metadata()?.len();
        Ok(st.add(name, file, Undo::durable(len)))
    }

    fn node_attr(st: &State, ino: u64) -> Result<FileAttr, Errno> {
        if ino == 1 {
            return Err(Errno::ENOENT);
        }
        let n = st.nodes.get(&ino).ok_or(Errno::ENOENT)?;
        Ok(attr(ino, &n.file.metadata()?))
    }

    /// Undo every file's writes since its last fsync.
    pub(super) fn crash(&self) -> std::io::Result<Vec<(String, Lost)>> {
        let mut st = self.lock();
        let mut out = Vec::new();
        for n in st.nodes.values_mut() {
            let lost = n.undo.crash(&n.file)?;
            if n.linked {
                out.push((n.name.to_string_lossy().into_owned(), lost));
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }
}

impl State {
    fn add(&mut self, name: &OsStr, file: File, undo: Undo) -> u64 {
        let ino = self.next_ino;
        self.next_ino += 1;
        self.names.insert(name.to_os_string(), ino);
        self.nodes.insert(ino, Node { name: name.to_os_string(), file, undo, linked: true });
        ino
    }

    fn node(&mut self, ino: INodeNo) -> Result<&mut Node, Errno> {
        self.nodes.get_mut(&ino.0).ok_or(Errno::ENOENT)
    }
}

impl Filesystem for LazyFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let mut st = self.lock();
        let r = (parent == INodeNo::ROOT)
            .then_some(())
            .ok_or(Errno::ENOENT)
            .and_then(|_| self.find(&mut st, name))
            .and_then(|ino| Self::node_attr(&st, ino));
        match r {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        if ino == INodeNo::ROOT {
            return match std::fs::metadata(&self.backing) {
                Ok(m) => reply.attr(&TTL, &attr(1, &m)),
                Err(e) => reply.error(e.into()),
            };
        }
        match Self::node_attr(&self.lock(), ino.0) {
            Ok(a) => reply.attr(&TTL, &a),
            Err(e) => reply.error(e),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let mut st = self.lock();
        let r = st.node(ino).and_then(|n| {
            if let Some(len) = size {
                n.undo.truncate(&n.file, len)?;
            }
            Ok(attr(ino.0, &n.file.metadata()?))
        });
        match r {
            Ok(a) => reply.attr(&TTL, &a),
            Err(e) => reply.error(e),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match self.lock().node(ino) {
            // no FOPEN_KEEP_CACHE: each open drops the kernel's cached pages
            Ok(_) => reply.opened(FileHandle(0), FopenFlags::empty()),
            Err(e) => reply.error(e),
        }
    }

    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        _flags: i32,
        reply: ReplyCreate,
    ) {
        let mut st = self.lock();
        let r = (|| {
            if parent != INodeNo::ROOT {
                return Err(Errno::ENOENT);
            }
            if let Ok(ino) = self.find(&mut st, name) {
                return Self::node_attr(&st, ino);
            }
            let file = self.open_backing(name, Some(mode & 0o7777))?;
            let ino = st.add(name, file, Undo::default());
            Self::node_attr(&st, ino)
        })();
        match r {
            Ok(a) => reply.created(&TTL, &a, Generation(0), FileHandle(0), FopenFlags::empty()),
            Err(e) => reply.error(e),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let mut st = self.lock();
        let r = st.node(ino).and_then(|n| {
            let mut buf = vec![0u8; size as usize];
            let k = read_full(&n.file, &mut buf, offset)?;
            buf.truncate(k);
            Ok(buf)
        });
        match r {
            Ok(b) => reply.data(&b),
            Err(e) => reply.error(e),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _wf: WriteFlags,
        _flags: OpenFlags,
        _lock: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let mut st = self.lock();
        match st.node(ino).and_then(|n| Ok(n.undo.write(&n.file, offset, data)?)) {
            Ok(()) => reply.written(data.len() as u32),
            Err(e) => reply.error(e),
        }
    }

    fn flush(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, _lock: LockOwner, reply: ReplyEmpty) {
        reply.ok();
    }

    fn fsync(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        let mut st = self.lock();
        st.fsyncs += 1;
        match st.node(ino).and_then(|n| Ok(n.undo.sync(&n.file)?)) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn fsyncdir(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        reply.ok();
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let mut st = self.lock();
        if parent != INodeNo::ROOT {
            return reply.error(Errno::ENOENT);
        }
        let Some(ino) = st.names.remove(name) else { return reply.error(Errno::ENOENT) };
        if let Some(n) = st.nodes.get_mut(&ino) {
            n.linked = false;
        }
        match std::fs::remove_file(self.backing.join(name)) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e.into()),
        }
    }

    fn access(&self, _req: &Request, _ino: INodeNo, _mask: fuser::AccessFlags, reply: ReplyEmpty) {
        reply.ok();
    }

    fn readdir(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, offset: u64, mut reply: ReplyDirectory) {
        if ino != INodeNo::ROOT {
            return reply.error(Errno::ENOTDIR);
        }
        let mut st = self.lock();
        // adopt backing files no one looked up yet
        if let Ok(rd) = std::fs::read_dir(&self.backing) {
            for e in rd.flatten() {
                let _ = self.find(&mut st, &e.file_name());
            }
        }
        let mut entries = vec![(1, FileType::Directory, OsString::from(".")), (1, FileType::Directory, "..".into())];
        entries.extend(st.names.iter().map(|(n, &i)| (i, FileType::RegularFile, n.clone())));
        for (i, (ino, kind, name)) in entries.into_iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(ino), (i + 1) as u64, kind, name) {
                break;
            }
        }
        reply.ok();
    }
}
