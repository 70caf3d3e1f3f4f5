//! The Prometheus text exposition format, version 0.0.4: for each family
//! a `# HELP` and a `# TYPE` line, then its samples; histograms as
//! cumulative `_bucket{le="…"}` lines ending in `+Inf`, then `_sum` and
//! `_count`.

use super::*;
use std::fmt::Write;

/// Which groups of metrics a process exposes (a bit set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Families(u8);

impl Families {
    /// The supervisor's: orphans, detection latency, scans, DLQ, leader renewals.
    pub const SUPERVISOR: Families = Families(1);
    /// A worker's: checkpoints committed, lease renewals.
    pub const WORKER: Families = Families(2);
    /// The transport server's: lines, syncs, acks, sync time, refusals.
    pub const TRANSPORT: Families = Families(4);
    /// The A2A server's: task state changes, refused connections.
    pub const A2A: Families = Families(8);
    /// The dashboard's: requests by result, store polls and their time, events sent.
    pub const DASHBOARD: Families = Families(16);

    /// Both sets.
    #[cfg_attr(not(feature = "a2a"), allow(dead_code))] // only `dhp a2a` serves two families
    pub const fn with(self, other: Families) -> Families {
        Families(self.0 | other.0)
    }

    fn has(self, f: Families) -> bool {
        self.0 & f.0 != 0
    }
}

/// The Content-Type of [`render`]'s text.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

fn head(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn counter(out: &mut String, name: &str, help: &str, c: &Counter) {
    count(out, name, help, c.get());
}

fn count(out: &mut String, name: &str, help: &str, n: u64) {
    head(out, name, "counter", help);
    let _ = writeln!(out, "{name} {n}");
}

fn labeled<const N: usize>(out: &mut String, name: &str, help: &str, c: &LabeledCounter<N>) {
    let counts: Vec<u64> = (0..N).map(|i| c.get(i)).collect();
    labeled_counts(out, name, help, c.label, &c.values, &counts);
}

fn labeled_counts(out: &mut String, name: &str, help: &str, label: &str, values: &[&str], counts: &[u64]) {
    head(out, name, "counter", help);
    for (v, n) in values.iter().zip(counts) {
        let _ = writeln!(out, "{name}{{{label}=\"{v}\"}} {n}");
    }
}

/// The transport server's counts: its own (zeros before it registered).
fn transport_counts(o: &mut String) {
    static NO_SYNCS: Histogram = Histogram::new(&SYNC_BUCKETS);
    let h = transport_stats();
    let s = h.map(|h| h.now()).unwrap_or_default();
    labeled_counts(
        o,
        "dhp_transport_lines_total",
        "Envelope and checkpoint lines the transport server handled, by result.",
        "result",
        &["appended", "duplicate", "refused"],
        &[s.envelopes + s.checkpoints_appended, s.checkpoints_duplicate, s.frames_rejected],
    );
    count(o, "dhp_transport_syncs_total", "Journal fdatasync calls that covered lines.", s.journal_syncs);
    let syncs = h.and_then(|h| h.sync_seconds()).unwrap_or(&NO_SYNCS);
    histogram(o, "dhp_transport_sync_seconds", "Time inside each journal fdatasync.", syncs);
    // every checkpoint line appended or found already there is acknowledged
    let acks = s.checkpoints_appended + s.checkpoints_duplicate;
    count(o, "dhp_transport_acks_total", "Checkpoint acknowledgements sent.", acks);
    labeled_counts(
        o,
        "dhp_transport_connections_refused_total",
        "Connections the transport server refused or closed before their hello, by reason.",
        "reason",
        &["busy", "hello", "evicted", "tls"],
        &[s.busy_rejections, s.hellos_rejected, s.unauthenticated_evicted, s.tls_failures],
    );
}

/// The supervisor's counts: its own counters (zeros before it registered).
fn supervisor_counts(o: &mut String) {
    let g = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
    let m = supervisor_metrics();
    let orphans: Vec<u64> = (0..3).map(|i| m.map_or(0, |m| g(&m.orphans[i]))).collect();
    let dlq: Vec<u64> = (0..3).map(|i| m.map_or(0, |m| g(&m.dlq[i]))).collect();
    let one = |f: fn(&SupervisorMetrics) -> &std::sync::atomic::AtomicU64| m.map_or(0, |m| g(f(m)));
    let help = "Handoffs orphaned by this process's supervisor, by reason.";
    labeled_counts(o, "dhp_orphans_total", help, "reason", &REASONS, &orphans);
    head(
        o,
        "dhp_orphan_detection_seconds",
        "histogram",
        "Seconds from the lease expiry (lease-expired), the previous liveness poll (worker-died) or the stall \
         deadline (stalled) to the orphan's commit.",
    );
    for (i, r) in REASONS.iter().enumerate() {
        histogram_samples(o, "dhp_orphan_detection_seconds", &format!("reason=\"{r}\""), &DETECTION[i]);
    }
    let help = "Handoffs dead-lettered (status failed), by reason.";
    labeled_counts(o, "dhp_dlq_total", help, "reason", &["max-attempts", "stall-retries", "budget"], &dlq);
    count(o, "dhp_scans_total", "Supervisor passes run as leader.", one(|m| &m.scans));
    count(o, "dhp_scan_errors_total", "Supervisor passes and liveness polls that failed.", one(|m| &m.errors));
    histogram(o, "dhp_scan_duration_seconds", "Wall time of each leader pass.", &SCAN_DURATION);
    let help = "Writes of the leadership row by this supervisor (renewals and takeovers).";
    count(o, "dhp_leader_renewals_total", help, one(|m| &m.leader_renewals));
}

/// `le` and the other label values are fixed strings with no character
/// that needs escaping; a bound prints as Rust's shortest round-trip form.
fn fmt_le(b: f64) -> String {
    if b.is_infinite() {
        "+Inf".to_string()
    } else {
        format!("{b}")
    }
}

fn histogram_samples(out: &mut String, name: &str, labels: &str, h: &Histogram) {
    let (buckets, count, sum) = h.snapshot();
    let sep = if labels.is_empty() { "" } else { "," };
    for (b, n) in buckets {
        let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{}\"}} {n}", fmt_le(b));
    }
    let braces = if labels.is_empty() { String::new() } else { format!("{{{labels}}}") };
    let _ = writeln!(out, "{name}_sum{braces} {sum}");
    let _ = writeln!(out, "{name}_count{braces} {count}");
}

fn histogram(out: &mut String, name: &str, help: &str, h: &Histogram) {
    head(out, name, "histogram", help);
    histogram_samples(out, name, "", h);
}

/// The metrics of `families` as exposition text.
pub fn render(families: Families) -> String {
    let mut o = String::with_capacity(8192);
    if families.has(Families::SUPERVISOR) {
        supervisor_counts(&mut o);
    }
    if families.has(Families::WORKER) {
        counter(&mut o, "dhp_checkpoints_total", "Checkpoints committed by this process's workers.", &CHECKPOINTS);
        counter(
            &mut o,
            "dhp_lease_renewals_total",
            "Heartbeats of this process's workers that extended a lease.",
            &LEASE_RENEWALS,
        );
    }
    if families.has(Families::TRANSPORT) {
        transport_counts(&mut o);
    }
    if families.has(Families::A2A) {
        labeled(&mut o, "dhp_a2a_tasks_total", "A2A task state changes made by this server, by state.", &A2A_TASKS);
        head(
            &mut o,
            "dhp_a2a_connections_refused_total",
            "counter",
            "Connections the A2A server refused (HTTP 503 at --max-connections).",
        );
        let _ = writeln!(o, "dhp_a2a_connections_refused_total{{reason=\"busy\"}} {}", A2A_REFUSED.get(0));
    }
    if families.has(Families::DASHBOARD) {
        labeled(
            &mut o,
            "dhp_dashboard_requests_total",
            "Requests the dashboard answered, by result (refused: foreign Host/Origin; unauthorized: no valid token).",
            &DASHBOARD_REQUESTS,
        );
        counter(&mut o, "dhp_dashboard_polls_total", "Store polls of the dashboard's poller.", &DASHBOARD_POLLS);
        histogram(&mut o, "dhp_dashboard_poll_seconds", "Wall time of each store poll.", &DASHBOARD_POLL_SECONDS);
        counter(&mut o, "dhp_dashboard_events_total", "Delta events sent to open pages.", &DASHBOARD_EVENTS);
    }
    o
}

#[cfg(test)]
pub(crate) mod grammar {
    //! A strict reader of the 0.0.4 text format, for the tests.

    use std::collections::{BTreeMap, BTreeSet};

    /// One sample line.
    #[derive(Debug, Clone, PartialEq)]
    pub struct Sample {
        pub name: String,
        pub labels: Vec<(String, String)>,
        pub value: f64,
    }

    fn metric_name(s: &str) -> bool {
        let mut c = s.chars();
        c.next().is_some_and(|f| f.is_ascii_alphabetic() || f == '_' || f == ':')
            && c.all(|x| x.is_ascii_alphanumeric() || x == '_' || x == ':')
    }

    fn label_name(s: &str) -> bool {
        let mut c = s.chars();
        c.next().is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
            && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
            && !s.starts_with("__")
    }

    fn value(s: &str) -> Result<f64, String> {
        match s {
            "+Inf" => Ok(f64::INFINITY),
            "-Inf" => Ok(f64::NEG_INFINITY),
            "NaN" => Ok(f64::NAN),
            _ if s.chars().all(|c| c.is_ascii_digit() || "+-.eE".contains(c)) && !s.is_empty() => {
                s.parse().map_err(|_| format!("bad value {s:?}"))
            }
            _ => Err(format!("bad value {s:?}")),
        }
    }

    fn sample(line: &str) -> Result<Sample, String> {
        let (name, rest) = match line.find(['{', ' ']) {
            Some(i) => line.split_at(i),
            None => return Err(format!("no value: {line:?}")),
        };
        if !metric_name(name) {
            return Err(format!("bad metric name {name:?}"));
        }
        let mut labels = Vec::new();
        let rest = if let Some(body) = rest.strip_prefix('{') {
            let mut chars = body.char_indices().peekable();
            let end;
            loop {
                let start = chars.peek().map(|(i, _)| *i).ok_or("unterminated labels")?;
                if body[start..].starts_with('}') {
                    end = start + 1;
                    break;
                }
                let eq = body[start..].find('=').ok_or("label without '='")? + start;
                let lname = &body[start..eq];
                if !label_name(lname) {
                    return Err(format!("bad label name {lname:?}"));
                }
                if body.get(eq + 1..eq + 2) != Some("\"") {
                    return Err("label value not quoted".into());
                }
                while chars.next_if(|(i, _)| *i <= eq + 1).is_some() {}
                let mut v = String::new();
                loop {
                    match chars.next().ok_or("unterminated label value")? {
                        (_, '\\') => match chars.next().ok_or("dangling escape")?.1 {
                            '\\' => v.push('\\'),
                            '"' => v.push('"'),
                            'n' => v.push('\n'),
                            c => return Err(format!("bad escape \\{c}")),
                        },
                        (_, '"') => break,
                        (_, '\n') => return Err("newline in a label value".into()),
                        (_, c) => v.push(c),
                    }
                }
                if labels.iter().any(|(n, _): &(String, String)| n == lname) {
                    return Err(format!("label {lname:?} twice"));
                }
                labels.push((lname.to_string(), v));
                match chars.next().ok_or("unterminated labels")? {
                    (_, ',') => {}
                    (i, '}') => {
                        end = i + 1;
                        break;
                    }
                    (_, c) => return Err(format!("unexpected {c:?} after a label")),
                }
            }
            &body[end..]
        } else {
            rest
        };
        let rest = rest.strip_prefix(' ').ok_or("no space before the value")?;
        let mut parts = rest.split(' ');
        let v = value(parts.next().ok_or("no value")?)?;
        if let Some(ts) = parts.next() {
            ts.parse::<i64>().map_err(|_| format!("bad timestamp {ts:?}"))?;
        }
        if parts.next().is_some() {
            return Err("trailing fields".into());
        }
        Ok(Sample { name: name.to_string(), labels, value: v })
    }

    /// Parse a whole exposition strictly; returns the samples by family.
    pub fn parse(text: &str) -> Result<BTreeMap<String, (String, Vec<Sample>)>, String> {
        if !text.ends_with('\n') {
            return Err("does not end with a newline".into());
        }
        let mut fams: BTreeMap<String, (String, Vec<Sample>)> = BTreeMap::new();
        let mut helped = BTreeSet::new();
        let mut current: Option<String> = None;
        for (n, line) in text.lines().enumerate() {
            let err = |e: String| format!("line {}: {e}: {line:?}", n + 1);
            if let Some(h) = line.strip_prefix("# HELP ") {
                let (name, doc) = h.split_once(' ').ok_or_else(|| err("HELP without text".into()))?;
                if !metric_name(name) || doc.is_empty() || !helped.insert(name.to_string()) {
                    return Err(err("bad or repeated HELP".into()));
                }
                if doc.contains('\\') && doc.replace("\\\\", "").replace("\\n", "").contains('\\') {
                    return Err(err("bad escape in HELP".into()));
                }
                continue;
            }
            if let Some(t) = line.strip_prefix("# TYPE ") {
                let (name, kind) = t.split_once(' ').ok_or_else(|| err("TYPE without a type".into()))?;
                if !["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind) {
                    return Err(err(format!("unknown type {kind:?}")));
                }
                if !helped.contains(name) || fams.contains_key(name) {
                    return Err(err("TYPE without its HELP before it, or repeated".into()));
                }
                fams.insert(name.to_string(), (kind.to_string(), Vec::new()));
                current = Some(name.to_string());
                continue;
            }
            if line.starts_with('#') || line.is_empty() {
                return Err(err("stray comment or blank line".into()));
            }
            let s = sample(line).map_err(err)?;
            let fam = current.clone().ok_or_else(|| err("sample before any TYPE".into()))?;
            let (kind, samples) = fams.get_mut(&fam).ok_or_else(|| err("no family".into()))?;
            let ok_name = match kind.as_str() {
                "histogram" => {
                    [format!("{fam}_bucket"), format!("{fam}_sum"), format!("{fam}_count")].contains(&s.name)
                }
                _ => s.name == fam,
            };
            if !ok_name {
                return Err(err(format!("sample {} outside its family {fam}", s.name)));
            }
            if kind == "counter" && (!fam.ends_with("_total") || s.value.is_sign_negative() || s.value.is_nan()) {
                return Err(err("a counter must be named *_total and be >= 0".into()));
            }
            samples.push(s);
        }
        for (fam, (kind, samples)) in &fams {
            if samples.is_empty() {
                return Err(format!("family {fam} has no sample"));
            }
            if kind == "histogram" {
                check_histogram(fam, samples)?;
            }
        }
        Ok(fams)
    }

    /// Per label set (without `le`): buckets ascending in `le` with
    /// non-decreasing counts, ending at `+Inf`, then `_sum`, then a
    /// `_count` equal to the `+Inf` bucket; names end in `_seconds`.
    fn check_histogram(fam: &str, samples: &[Sample]) -> Result<(), String> {
        if !fam.ends_with("_seconds") {
            return Err(format!("{fam}: a duration histogram is named *_seconds"));
        }
        let mut i = 0;
        while i < samples.len() {
            let key: Vec<_> = samples[i].labels.iter().filter(|(n, _)| n != "le").cloned().collect();
            let (mut last_le, mut last_n) = (f64::NEG_INFINITY, 0.0);
            while i < samples.len() && samples[i].name.ends_with("_bucket") {
                let s = &samples[i];
                let rest: Vec<_> = s.labels.iter().filter(|(n, _)| n != "le").cloned().collect();
                let le = s.labels.iter().find(|(n, _)| n == "le").ok_or(format!("{fam}: bucket without le"))?;
                let le = value(&le.1)?;
                if rest != key || le <= last_le || s.value < last_n {
                    return Err(format!("{fam}: buckets out of order or decreasing at {s:?}"));
                }
                (last_le, last_n) = (le, s.value);
                i += 1;
            }
            if last_le != f64::INFINITY {
                return Err(format!("{fam}: buckets do not end at +Inf"));
            }
            let sum = samples.get(i).filter(|s| s.name.ends_with("_sum") && s.labels == key);
            let count = samples.get(i + 1).filter(|s| s.name.ends_with("_count") && s.labels == key);
            match (sum, count) {
                (Some(s), Some(c)) if c.value == last_n && s.value >= 0.0 => i += 2,
                _ => return Err(format!("{fam}: _sum and _count must follow the buckets, _count = +Inf bucket")),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::grammar::parse;
    use super::*;

    fn all() -> Families {
        Families::SUPERVISOR
            .with(Families::WORKER)
            .with(Families::TRANSPORT)
            .with(Families::A2A)
            .with(Families::DASHBOARD)
    }

    #[test]
    fn our_exposition_passes_the_strict_grammar() {
        let m = std::sync::Arc::new(SupervisorMetrics::default());
        m.orphans[1].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        supervisor(m);
        DETECTION[1].observe_secs(0.004);
        SCAN_DURATION.observe_secs(0.3);
        let text = render(all());
        let fams = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        for name in [
            "dhp_orphans_total",
            "dhp_orphan_detection_seconds",
            "dhp_dlq_total",
            "dhp_scans_total",
            "dhp_scan_duration_seconds",
            "dhp_leader_renewals_total",
            "dhp_checkpoints_total",
            "dhp_lease_renewals_total",
            "dhp_transport_lines_total",
            "dhp_transport_syncs_total",
            "dhp_transport_sync_seconds",
            "dhp_transport_acks_total",
            "dhp_transport_connections_refused_total",
            "dhp_a2a_tasks_total",
            "dhp_a2a_connections_refused_total",
        ] {
            assert!(fams.contains_key(name), "{name} missing");
        }
        let died = fams["dhp_orphans_total"].1.iter().find(|s| s.labels == [("reason".into(), "worker-died".into())]);
        assert!(died.is_some_and(|s| s.value >= 1.0));
        // 0.004 s fell in le=0.005 and every bucket above it.
        let det = &fams["dhp_orphan_detection_seconds"].1;
        let bucket = |le: &str| {
            det.iter()
                .find(|s| {
                    s.labels == [("reason".to_string(), "worker-died".to_string()), ("le".to_string(), le.to_string())]
                })
                .map(|s| s.value)
        };
        assert!(bucket("0.0025") < bucket("0.005") && bucket("+Inf") >= bucket("0.005"));
        // Only the families asked for.
        let t = parse(&render(Families::TRANSPORT)).unwrap();
        assert!(t.keys().all(|k| k.starts_with("dhp_transport_")), "{:?}", t.keys());
    }

    /// Rewrite the first line that starts with `prefix`.
    fn edit(text: &str, prefix: &str, f: impl Fn(&str) -> String) -> String {
        let mut done = false;
        let lines: Vec<String> = text
            .lines()
            .map(|l| {
                if !done && l.starts_with(prefix) {
                    done = true;
                    f(l)
                } else {
                    l.to_string()
                }
            })
            .collect();
        assert!(done, "no line starts with {prefix:?}");
        lines.join("\n") + "\n"
    }

    /// The grammar is strict: each of these is one defect, and refused.
    #[test]
    fn the_grammar_refuses_broken_expositions() {
        let good = render(all());
        assert!(parse(&good).is_ok());
        let value_plus_one = |l: &str| {
            let (name, v) = l.rsplit_once(' ').unwrap();
            format!("{name} {}", v.parse::<f64>().unwrap() + 1.0)
        };
        let broken = [
            good.trim_end().to_string(),
            edit(&good, "# HELP dhp_scans_total", |l| format!("{l}\n{l}")),
            edit(&good, "# TYPE dhp_scans_total", |_| String::new()).replace("\n\n", "\n"),
            edit(&good, "dhp_scans_total ", |l| l.replacen(' ', "  ", 1)),
            edit(&good, "dhp_checkpoints_total ", |l| l.replacen("dhp_", "dhp-", 1)),
            edit(&good, "dhp_orphans_total{", |l| l.replacen("\"lease-expired\"", "lease-expired", 1)),
            edit(&good, "dhp_scan_duration_seconds_bucket{le=\"+Inf\"}", |l| l.replacen("+Inf", "99", 1)),
            edit(&good, "dhp_scans_total ", |l| l.replacen("dhp_scans_total", "dhp_scans", 1)),
            edit(&good, "dhp_transport_sync_seconds_count", value_plus_one),
            edit(&good, "dhp_scan_duration_seconds_bucket{le=\"0.001\"}", |l| {
                format!("{} 1e18", l.rsplit_once(' ').unwrap().0)
            }),
            edit(&good, "dhp_transport_acks_total ", |l| l.replacen(' ', " -", 1)),
            edit(&good, "dhp_scans_total ", |l| format!("{l} zz")),
            edit(&good, "# TYPE dhp_scans_total", |l| l.replacen("counter", "countre", 1)),
            edit(&good, "dhp_a2a_tasks_total{", |l| l.replacen("{state=", "{state=\"x\",state=", 1)),
        ];
        for (i, b) in broken.iter().enumerate() {
            assert!(parse(b).is_err(), "case {i} accepted:\n{b}");
        }
    }
}
