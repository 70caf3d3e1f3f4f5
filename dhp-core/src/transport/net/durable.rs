//! Acks waiting for the journal sync that covers them. Each waiter is
//! woken by the sync that passes its position, and only by that one: with
//! many connections waiting, a sync that covers three of them wakes three
//! tasks, not all (a broadcast made every sync poll every waiter).

use crate::error::{Error, Result};
use crate::TransportKind;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::oneshot;

type Outcome = std::result::Result<u64, Arc<str>>;

#[derive(Default)]
struct State {
    /// Every byte of the journal's stream below this is durable.
    pos: u64,
    /// When the sync that made `pos` durable ended (`SyncStats::now_ns`).
    at_ns: u64,
    /// A sync failed: nothing more is ever acknowledged (after a failed
    /// fsync the page cache cannot be trusted).
    failed: Option<Arc<str>>,
    waiters: Vec<(u64, oneshot::Sender<Outcome>)>,
}

/// What the sync thread has made durable, and who waits for more.
#[derive(Default)]
pub(crate) struct Durable {
    st: Mutex<State>,
}

fn failed_error(msg: &str) -> Error {
    Error::transport(TransportKind::Journal, format!("journal sync failed: {msg}"))
}

impl Durable {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Why syncing stopped, if it did.
    pub(crate) fn failed(&self) -> Option<Arc<str>> {
        self.lock().failed.clone()
    }

    /// Wait until the stream is durable up to `pos`; returns when the sync
    /// that made it so ended.
    pub(crate) async fn wait(&self, pos: u64) -> Result<u64> {
        let rx = {
            let mut st = self.lock();
            if let Some(f) = &st.failed {
                return Err(failed_error(f));
            }
            if st.pos >= pos {
                return Ok(st.at_ns);
            }
            let (tx, rx) = oneshot::channel();
            st.waiters.push((pos, tx));
            rx
        };
        match rx.await {
            Ok(Ok(at)) => Ok(at),
            Ok(Err(f)) => Err(failed_error(&f)),
            Err(_) => Err(Error::transport(TransportKind::Journal, "journal sync thread stopped")),
        }
    }

    /// The stream is durable up to `pos` (a sync ended at `at_ns`): wake
    /// the waiters it covers.
    pub(crate) fn publish(&self, pos: u64, at_ns: u64) {
        let mut ready = Vec::new();
        {
            let mut st = self.lock();
            st.pos = st.pos.max(pos);
            st.at_ns = at_ns;
            let mut i = 0;
            while i < st.waiters.len() {
                if st.waiters[i].0 <= st.pos {
                    ready.push(st.waiters.swap_remove(i).1);
                } else {
                    i += 1;
                }
            }
        }
        for tx in ready {
            let _ = tx.send(Ok(at_ns));
        }
    }

    /// Syncing failed: every waiter, now and later, gets the error.
    pub(crate) fn fail(&self, msg: Arc<str>) {
        let waiters = {
            let mut st = self.lock();
            st.failed = Some(msg.clone());
            std::mem::take(&mut st.waiters)
        };
        for (_, tx) in waiters {
            let _ = tx.send(Err(msg.clone()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_sync_wakes_only_the_waiters_it_covers() {
        let d = Arc::new(Durable::default());
        let (a, b) = (d.clone(), d.clone());
        let low = tokio::spawn(async move { a.wait(10).await });
        let high = tokio::spawn(async move { b.wait(20).await });
        while d.lock().waiters.len() < 2 {
            tokio::task::yield_now().await;
        }
        d.publish(15, 7);
        assert_eq!(low.await.unwrap().unwrap(), 7);
        assert_eq!(d.lock().waiters.len(), 1, "the waiter past the sync still waits");
        assert!(!high.is_finished());
        d.fail(Arc::from("disk gone"));
        assert!(high.await.unwrap().unwrap_err().to_string().contains("disk gone"));
        assert_eq!(d.wait(1).await.unwrap_err().to_string(), d.wait(100).await.unwrap_err().to_string());
    }
}
