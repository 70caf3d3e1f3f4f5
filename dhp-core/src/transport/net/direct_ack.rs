//! Acks written by the journal's sync thread itself (issue 49, item 4).
//!
//! A plaintext connection hands its held acks, with a second descriptor of
//! its socket, to the journal and goes back to reading at once; the sync
//! thread that makes the lines durable writes the acks the moment its
//! `fdatasync` returns. Before, the connection's task waited for the sync
//! and was woken to write them: one thread hand-off more per ack (on a
//! busy machine it waited for a CPU) and one more wake-up of the task.
//!
//! Order is kept per connection: the sync thread writes an ack only while
//! nothing handed earlier is still unwritten. What the socket does not take
//! at once (it never blocks) goes back to the task, in order, with every
//! later ack behind it, until the task has written them; the task wakes
//! for that (and for nothing else). Before the task writes a reply of its
//! own (a refusal, the hello's) it waits until every ack handed before it
//! is out. An ack dropped unwritten (the journal failed: the line may not
//! be durable) closes the connection: no ack after it may leave.
//!
//! TLS connections keep the task's path: their bytes go through the
//! session.

use std::collections::VecDeque;
use std::io::Write;
use std::net::TcpStream;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::Notify;

/// A connection's side of its direct acks.
pub(crate) struct DirectConn {
    sock: TcpStream,
    state: Mutex<State>,
    notify: Notify,
}

#[derive(Default)]
struct State {
    /// Handed to the journal, not yet released by a sync.
    outstanding: usize,
    /// Acks (or their rest) the sync thread could not write, in order:
    /// the task writes them.
    returned: VecDeque<Vec<u8>>,
    /// `returned` was not empty since the task last emptied it: acks
    /// released meanwhile queue behind it instead of being written.
    behind: bool,
    /// The task waits for `outstanding` to reach zero.
    draining: bool,
    /// An ack was dropped unwritten: the connection must close.
    failed: bool,
}

/// What the task must do next ([`DirectConn::take`]).
pub(crate) enum Take {
    /// Write these, in order, then take again.
    Write(Vec<Vec<u8>>),
    /// Nothing is owed to the client now.
    Clear,
    /// Close without another byte.
    Failed,
}

/// The write side of a connection, which may lend a second descriptor of
/// its socket for direct acks (plaintext only).
pub(crate) trait Second {
    /// A [`DirectConn`] on a second descriptor, if this side can have one.
    fn second(&self) -> Option<Arc<DirectConn>> {
        None
    }
}

impl Second for tokio::net::tcp::OwnedWriteHalf {
    fn second(&self) -> Option<Arc<DirectConn>> {
        DirectConn::of(self.as_ref())
    }
}

/// TLS: the bytes must go through the session.
impl<S> Second for tokio::io::WriteHalf<S> {}

impl DirectConn {
    /// A second descriptor of `sock` (`None` when the process is out of
    /// descriptors: the task writes its acks itself).
    pub(crate) fn of(sock: &tokio::net::TcpStream) -> Option<Arc<Self>> {
        use std::os::fd::AsFd;
        let fd = sock.as_fd().try_clone_to_owned().ok()?;
        Some(Arc::new(DirectConn { sock: TcpStream::from(fd), state: Mutex::default(), notify: Notify::new() }))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Hand `bytes` over: they are written when [`DirectAck::release`]d.
    pub(crate) fn hand(self: &Arc<Self>, bytes: Vec<u8>) -> DirectAck {
        self.lock().outstanding += 1;
        DirectAck { conn: self.clone(), bytes, released: false }
    }

    /// What the task owes the client. With `drain`, [`Take::Clear`] only
    /// once nothing handed is outstanding (else an empty write list: wait
    /// on [`Self::notified`] and take again).
    pub(crate) fn take(&self, drain: bool) -> Take {
        let mut st = self.lock();
        if st.failed {
            return Take::Failed;
        }
        if !st.returned.is_empty() {
            return Take::Write(st.returned.drain(..).collect());
        }
        // Everything returned so far is written: later acks may go direct.
        st.behind = false;
        if drain && st.outstanding > 0 {
            st.draining = true;
            return Take::Write(Vec::new());
        }
        st.draining = false;
        Take::Clear
    }

    /// Resolves when there is something to [`Self::take`] (or may be).
    pub(crate) async fn notified(&self) {
        self.notify.notified().await
    }
}

/// Acks handed to the journal, waiting for the sync that covers them.
pub(crate) struct DirectAck {
    conn: Arc<DirectConn>,
    bytes: Vec<u8>,
    released: bool,
}

impl DirectAck {
    /// The lines are durable: write the acks now unless something handed
    /// earlier is still unwritten; what is not written goes back to the
    /// task. True when all of it was written here.
    pub(crate) fn release(mut self) -> bool {
        self.released = true;
        let conn = self.conn.clone();
        let mut st = conn.lock();
        st.outstanding = st.outstanding.saturating_sub(1);
        let sent = if st.behind || st.failed { 0 } else { send(&conn.sock, &self.bytes) };
        let all = sent == self.bytes.len();
        if !all {
            st.behind = true;
            st.returned.push_back(self.bytes.split_off(sent));
        }
        let wake = !all || (st.draining && st.outstanding == 0);
        drop(st);
        if wake {
            conn.notify.notify_one();
        }
        all
    }

    /// Already durable when handed: the task writes them itself (after
    /// what it handed before).
    pub(crate) fn into_bytes(mut self) -> Vec<u8> {
        self.released = true;
        let mut st = self.conn.lock();
        st.outstanding = st.outstanding.saturating_sub(1);
        if st.draining && st.outstanding == 0 {
            self.conn.notify.notify_one();
        }
        std::mem::take(&mut self.bytes)
    }
}

impl Drop for DirectAck {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        // Dropped by a failed journal: these lines may not be durable.
        let mut st = self.conn.lock();
        st.outstanding = st.outstanding.saturating_sub(1);
        st.failed = true;
        drop(st);
        self.conn.notify.notify_one();
    }
}

/// Write what the socket takes now, without blocking; the bytes written.
fn send(mut sock: &TcpStream, bytes: &[u8]) -> usize {
    let mut sent = 0;
    while sent < bytes.len() {
        // std writes a TcpStream with MSG_NOSIGNAL: a closed peer is an
        // error here, not a SIGPIPE.
        match sock.write(&bytes[sent..]) {
            Ok(0) => break,
            Ok(n) => sent += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            // Full (WouldBlock) or broken: the task finds out.
            Err(_) => break,
        }
    }
    sent
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    async fn pair() -> (Arc<DirectConn>, std::net::TcpStream) {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (server, _) = l.accept().await.unwrap();
        let conn = DirectConn::of(&server).unwrap();
        std::mem::forget(server); // its descriptor stays open with the test
        (conn, client)
    }

    fn written(take: Take) -> Vec<u8> {
        match take {
            Take::Write(v) => v.concat(),
            Take::Clear => Vec::new(),
            Take::Failed => panic!("failed"),
        }
    }

    #[tokio::test]
    async fn acks_leave_in_order_and_a_full_socket_queues_the_rest_for_the_task() {
        let (conn, mut client) = pair().await;
        let (a, b, c) = (conn.hand(b"a\n".to_vec()), conn.hand(vec![b'b'; 32 << 20]), conn.hand(b"c\n".to_vec()));
        assert!(matches!(conn.take(true), Take::Write(v) if v.is_empty()), "three outstanding: wait");
        assert!(a.release(), "written by the releasing thread");
        let mut got = [0u8; 2];
        client.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"a\n");
        // The client reads nothing more: the socket takes part of b.
        assert!(!b.release(), "32 MiB do not fit a socket's buffers");
        assert!(!c.release(), "c queues behind b's rest: it must not overtake");
        let rest = written(conn.take(false));
        assert!(rest.ends_with(b"bc\n") && rest.len() < (32 << 20) + 2, "{}", rest.len());
        assert!(matches!(conn.take(true), Take::Clear), "nothing outstanding, nothing returned");
        // Once the task has written what came back, acks go direct again
        // (the client reads what the socket took of b first).
        client.set_nonblocking(true).unwrap();
        let mut sink = vec![0u8; 1 << 20];
        let (mut direct_part, want) = (0, (32 << 20) + 2 - rest.len());
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while direct_part < want && std::time::Instant::now() < until {
            match client.read(&mut sink) {
                Ok(n) => direct_part += n,
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(5)),
            }
        }
        assert_eq!(direct_part, want, "b split between the two writers, nothing lost");
        client.set_nonblocking(false).unwrap();
        let d = conn.hand(b"d\n".to_vec());
        assert!(d.release());
        client.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"d\n");
    }

    #[tokio::test]
    async fn an_ack_dropped_unreleased_fails_the_connection() {
        let (conn, _client) = pair().await;
        let (a, b) = (conn.hand(b"a\n".to_vec()), conn.hand(b"b\n".to_vec()));
        drop(a); // the journal failed before the sync covering it
        assert!(matches!(conn.take(false), Take::Failed));
        assert!(!b.release(), "nothing leaves after it");
        assert!(matches!(conn.take(false), Take::Failed), "and stays failed");
    }

    #[tokio::test]
    async fn a_drain_is_woken_by_the_last_release() {
        let (conn, _client) = pair().await;
        let a = conn.hand(b"a\n".to_vec());
        assert!(matches!(conn.take(true), Take::Write(v) if v.is_empty()));
        let waiter = {
            let conn = conn.clone();
            tokio::spawn(async move { conn.notified().await })
        };
        tokio::task::yield_now().await;
        assert!(a.release());
        tokio::time::timeout(std::time::Duration::from_secs(5), waiter).await.unwrap().unwrap();
        assert!(matches!(conn.take(true), Take::Clear));
    }
}
