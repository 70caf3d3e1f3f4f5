//! The one poller of a dashboard: every `--poll` it asks the store what
//! changed since its last look ([`View::changes`], nothing read while
//! nothing was committed), keeps the counts by status and the owners it
//! saw, and broadcasts one delta event that every open page receives.
//! The store's cost therefore follows the rate of change, not the number
//! of handoffs or of open pages. A page of handoffs is read with a
//! catch-up of the same poller ([`Live::page`]), so the counts a page shows
//! beside its rows are never older than the rows.

use dhp_core::store::dashboard_view::{Filter, Row, View, Watermark, STATUSES};
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::broadcast;

/// Owner changes kept per handoff.
const HISTORY_PER_HANDOFF: usize = 64;
/// Handoffs whose owner history is kept (the oldest tracked is dropped).
const HISTORY_HANDOFFS: usize = 20_000;
/// Events a slow page may fall behind before it is told to resync.
const CHANNEL: usize = 256;

fn now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// One owner change this dashboard saw.
#[derive(Clone, serde::Serialize, PartialEq)]
pub struct Owned {
    /// When the dashboard saw it (its clock, Unix seconds).
    pub seen_at: f64,
    pub status: Option<String>,
    pub holder: Option<String>,
    pub fence: Option<i64>,
    pub attempt: Value,
}

impl Owned {
    fn of(r: &Row) -> Owned {
        Owned {
            seen_at: now(),
            status: r.status.clone(),
            holder: r.holder.clone(),
            fence: r.fence,
            attempt: r.attempt.clone(),
        }
    }

    fn same(&self, o: &Owned) -> bool {
        self.status == o.status && self.holder == o.holder && self.fence == o.fence
    }
}

/// What the poller keeps.
#[derive(Default)]
struct State {
    /// Status of every handoff (counts follow from it).
    status: HashMap<String, Option<String>>,
    counts: HashMap<String, i64>,
    history: HashMap<String, VecDeque<Owned>>,
    order: VecDeque<String>,
    leader: Option<(String, f64, f64)>,
    /// Leadership holders seen in turn: a new holder starts a new term.
    terms: u64,
    term_since: Option<f64>,
    liveness: Vec<(String, Option<i32>)>,
    seq: u64,
    last_error: Option<String>,
}

impl State {
    fn count(&mut self, status: &Option<String>, by: i64) {
        let key = status.clone().unwrap_or_else(|| "unreadable".into());
        *self.counts.entry(key).or_insert(0) += by;
    }

    fn set_status(&mut self, hid: &str, status: &Option<String>) {
        match self.status.get(hid).cloned() {
            Some(old) if &old == status => return,
            Some(old) => self.count(&old, -1),
            None => {}
        }
        self.count(status, 1);
        self.status.insert(hid.to_string(), status.clone());
    }

    fn observe(&mut self, r: &Row) {
        let o = Owned::of(r);
        if let Some(h) = self.history.get_mut(&r.hid) {
            if h.back().is_some_and(|last| last.same(&o)) {
                return;
            }
            h.push_back(o);
            while h.len() > HISTORY_PER_HANDOFF {
                h.pop_front();
            }
            return;
        }
        if self.order.len() >= HISTORY_HANDOFFS {
            if let Some(old) = self.order.pop_front() {
                self.history.remove(&old);
            }
        }
        self.order.push_back(r.hid.clone());
        self.history.insert(r.hid.clone(), VecDeque::from([o]));
    }

    fn summary(&self) -> Value {
        let mut counts = serde_json::Map::new();
        for s in STATUSES {
            counts.insert(s.into(), json!(self.counts.get(s).copied().unwrap_or(0)));
        }
        for (k, v) in &self.counts {
            if !counts.contains_key(k) && *v != 0 {
                counts.insert(k.clone(), json!(v));
            }
        }
        let total: i64 = self.counts.values().sum();
        json!({
            "seq": self.seq,
            "counts": counts,
            "total": total,
            "leader": self.leader.as_ref().map(|(h, e, u)| json!({
                "holder": h, "expires_at": e, "updated_at": u,
                "live": *e > now(), "terms_seen": self.terms, "term_seen_since": self.term_since,
            })),
            "liveness": self.liveness.iter().map(|(h, pid)| json!({"holder": h, "live": pid.is_some(), "pid": pid}))
                .collect::<Vec<_>>(),
            "now": now(),
            "error": self.last_error,
        })
    }
}

/// The shared state and the event channel.
pub struct Live {
    pub view: Arc<View>,
    /// Where the poller has read up to; held for a whole catch-up (read,
    /// count, broadcast), so catch-ups are one at a time and in `seq` order.
    wm: Mutex<Watermark>,
    state: Mutex<State>,
    events: broadcast::Sender<Arc<String>>,
}

impl Live {
    /// Read every handoff's status once (the status index), the leader
    /// and the liveness tokens, and a watermark at the present.
    pub fn start(view: Arc<View>) -> dhp_core::error::Result<Arc<Live>> {
        let mut st = State::default();
        let wm = view.watermark()?;
        let mut pairs = Vec::new();
        view.each_status(|h, s| pairs.push((h, s)))?;
        for (h, s) in pairs {
            st.set_status(&h, &s);
        }
        st.leader = view.leadership()?;
        if st.leader.is_some() {
            st.terms = 1;
            st.term_since = Some(now());
        }
        st.liveness = view.liveness();
        let (events, _) = broadcast::channel(CHANNEL);
        Ok(Arc::new(Live { view, wm: Mutex::new(wm), state: Mutex::new(st), events }))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Arc<String>> {
        self.events.subscribe()
    }

    pub fn summary(&self) -> Value {
        self.lock().summary()
    }

    /// The owners seen for `hid`, starting with its row as it is now.
    pub fn history(&self, row: &Row) -> Value {
        let mut st = self.lock();
        st.observe(row);
        json!(st.history.get(&row.hid).map(|h| h.iter().cloned().collect::<Vec<_>>()).unwrap_or_default())
    }

    /// Poll until `stop`; each tick that found something sends one event.
    pub fn poll(self: Arc<Self>, every: Duration, stop: Arc<AtomicBool>) {
        while !stop.load(Ordering::SeqCst) {
            std::thread::sleep(every);
            let mut wm = self.wm.lock().unwrap_or_else(|p| p.into_inner());
            self.tick(&mut wm);
        }
    }

    /// A page of handoffs and the summary (counts) to show beside it: the
    /// page is read, then the poller catches up (one tick, broadcast as
    /// usual), so the summary counts every change the rows show.
    /// `changed`: the handoffs that tick read, as they are now — a page
    /// applies them to `rows` as it would that tick's delta, and then shows
    /// the store as of the summary's `seq`.
    pub fn page(&self, filter: &Filter, after: Option<&str>, limit: usize) -> dhp_core::error::Result<Value> {
        let mut wm = self.wm.lock().unwrap_or_else(|p| p.into_inner());
        let (rows, next) = self.view.page(filter, after, limit)?;
        let (changed, truncated) = self.tick(&mut wm);
        Ok(
            json!({"rows": rows, "next_after": next, "summary": self.summary(), "changed": changed, "truncated": truncated}),
        )
    }

    /// Read what changed since `wm`, count it, broadcast it; returns the
    /// changed rows it read and whether there were more.
    fn tick(&self, wm: &mut Watermark) -> (Vec<Row>, bool) {
        let started = std::time::Instant::now();
        let delta = self.view.changes(wm);
        let leader = self.view.leadership();
        let liveness = self.view.liveness();
        crate::metrics::DASHBOARD_POLLS.inc();
        crate::metrics::DASHBOARD_POLL_SECONDS.observe(started.elapsed());
        let mut st = self.lock();
        let mut changed = false;
        let mut rows = Vec::new();
        let mut truncated = false;
        let mut approvals = false;
        match (delta, leader) {
            (Ok(d), Ok(l)) => {
                if st.last_error.take().is_some() {
                    changed = true;
                }
                for r in &d.rows {
                    st.set_status(&r.hid, &r.status);
                    st.observe(r);
                }
                if l.as_ref().map(|x| &x.0) != st.leader.as_ref().map(|x| &x.0) && l.is_some() {
                    st.terms += 1;
                    st.term_since = Some(now());
                }
                if l != st.leader {
                    st.leader = l;
                    changed = true;
                }
                changed |= !d.is_empty();
                truncated = d.truncated;
                approvals = d.approvals_changed;
                rows = d.rows;
            }
            (Err(e), _) | (_, Err(e)) => {
                let msg = format!("{}: {e}", e.kind());
                if st.last_error.as_deref() != Some(msg.as_str()) {
                    tracing::warn!(error = %msg, "dashboard: the store could not be read");
                    st.last_error = Some(msg);
                    changed = true;
                }
            }
        }
        if liveness != st.liveness {
            st.liveness = liveness;
            changed = true;
        }
        if !changed {
            return (rows, truncated);
        }
        st.seq += 1;
        let mut ev = st.summary();
        ev["rows"] = json!(rows);
        ev["truncated"] = json!(truncated);
        ev["approvals_changed"] = json!(approvals);
        drop(st);
        // no page open: nobody to tell
        let _ = self.events.send(Arc::new(ev.to_string()));
        crate::metrics::DASHBOARD_EVENTS.inc();
        (rows, truncated)
    }
}
