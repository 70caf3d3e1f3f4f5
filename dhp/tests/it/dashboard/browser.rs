//! The page in a real browser (headless Chromium over the DevTools
//! protocol): it loads after a `/login?token=` redirect, filters by status,
//! and follows one handoff live — running under w1 → orphaned when w1 is
//! SIGKILLed and the supervisor notices → running under w2 (fence + 1)
//! after `dhp work recover` → completed — without a reload. Screenshots
//! of each step go to the test's output directory (paths printed).
use crate::common::*;
use crate::dashboard_support::*;
use serde_json::Value;
use std::process::{Child, Command, Stdio};

fn start(args: &[&str]) -> Child {
    Command::new(dhp_bin())
        .args(args)
        // a 30 s lease: the orphan below is the liveness token's doing
        .env("DHP_LEASE_INTERVAL_S", "10")
        .env("DHP_LEASE_MAX_MISSED", "3")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// What the detail panel shows: (status, holder, fence).
fn detail(b: &mut Browser) -> (String, String, String) {
    let v = b.peek(
        "[document.getElementById('detail-status').textContent, document.getElementById('detail-holder').textContent, \
          document.getElementById('detail-fence').textContent]",
    );
    let s = |i: usize| v[i].as_str().unwrap_or("").to_string();
    (s(0), s(1), s(2))
}

fn table(b: &mut Browser) -> Vec<(String, String)> {
    let v =
        b.peek("[...document.querySelectorAll('#handoffs tbody tr')].map(tr => [tr.dataset.hid, tr.dataset.status])");
    v.as_array().into_iter().flatten().map(|r| (r[0].as_str().unwrap().into(), r[1].as_str().unwrap().into())).collect()
}

#[test]
fn the_page_follows_a_handoff_through_kill_orphan_and_recovery() {
    let out = output_dir("the_page_follows_a_handoff");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let (code, v, err) = dhp(&["dispatch", root, "--census", "1000,31000,100"], &[]);
    assert_eq!(code, 0, "{err}");
    let hid = v["hid"].as_str().unwrap().to_string();
    for range in ["2000,3000,100", "4000,5000,100"] {
        let (code, _, err) = dhp(&["dispatch", root, "--census", range], &[]);
        assert_eq!(code, 0, "{err}");
    }
    let d = Dash::start(dir.path(), &[]);
    let mut b = Browser::start();
    b.navigate(&format!("{}login?token={TOKEN}", d.url));
    wait_some("the page loaded", 20.0, || {
        let v = b.peek("[location.pathname, Number(document.body.dataset.loaded || 0), document.querySelectorAll('#handoffs tbody tr').length, document.getElementById('conn').dataset.state]");
        (v[0] == "/" && v[1].as_i64() >= Some(1) && v[2] == 3 && v[3] == "live").then_some(())
    });
    // the token is not in the address bar, and a reload would lose this
    assert_eq!(b.eval("location.search"), "");
    b.eval("window.__no_reload = 'still here'; window.__seen = []; true");
    b.eval(
        "new MutationObserver(() => { const g = (i) => document.getElementById(i).textContent; \
           const s = [g('detail-status'), g('detail-holder'), g('detail-fence')]; const l = window.__seen[window.__seen.length - 1]; \
           if (!l || l.join() !== s.join()) window.__seen.push(s); }) \
         .observe(document.getElementById('detail'), {subtree: true, childList: true, characterData: true}); true",
    );
    b.screenshot(&out.join("1-loaded.png"));

    let mut sup = start(&["supervisor", root, "sup", "120"]);
    let mut w1 = start(&["work", root, "--runner", "w1", "claim", &hid, "--pace", "0.02"]);
    // filter: running shows only the claimed handoff
    b.eval("document.querySelector('button[data-filter=running]').click(); true");
    // the table and the filter's count in one look (the page changes both in
    // one task): whenever the table shows the running handoff, the count
    // says so too — the page reads them together (dashboard::page_counts)
    let running = vec![(hid.clone(), "running".to_string())];
    wait_some("the running filter shows only the claimed handoff, counted", 20.0, || {
        let v = b.peek(
            "[[...document.querySelectorAll('#handoffs tbody tr')].map(tr => [tr.dataset.hid, tr.dataset.status]), \
              document.querySelector('button[data-filter=running]').textContent]",
        );
        let t: Vec<(String, String)> = serde_json::from_value(v[0].clone()).unwrap_or_default();
        let label = &v[1];
        if t == running {
            assert_eq!(label, "running 1", "the count on the filter beside the running row");
        }
        (t == running).then_some(())
    });
    b.screenshot(&out.join("2-filtered-running.png"));
    b.eval("document.querySelector('button[data-filter=pending]').click(); true");
    wait_some("the pending filter", 20.0, || {
        let t = table(&mut b);
        (t.len() == 2 && t.iter().all(|(h, s)| s == "pending" && *h != hid)).then_some(())
    });
    b.eval("document.querySelector('button[data-filter=\"\"]').click(); true");
    wait_some("all three again", 20.0, || (table(&mut b).len() == 3).then_some(()));
    b.eval(&format!("document.querySelector('#handoffs tbody tr[data-hid=\"{hid}\"]').click(); true"));
    wait_some("running under w1, with checkpoints", 20.0, || {
        let (s, h, f) = detail(&mut b);
        let ck = b.peek("Number(document.getElementById('detail-ckpts').textContent)").as_i64().unwrap_or(0);
        (s == "running" && h == "w1" && f == "0" && ck >= 3).then_some(())
    });
    b.screenshot(&out.join("3-running-w1.png"));

    w1.kill().unwrap();
    w1.wait().unwrap();
    let (_, _, orphan_fence) = wait_some("orphaned", 20.0, || {
        let d = detail(&mut b);
        (d.0 == "orphaned").then_some(d)
    });
    let reason = b.eval("document.getElementById('detail-reason').textContent");
    assert_eq!(reason, "worker-died");
    // (the detail may be fetched a tick before the liveness list moves on)
    wait_some("w1 no longer shown alive", 20.0, || {
        let t = b.peek("[...document.querySelectorAll('#liveness div')].map(e => e.textContent).join('|')");
        t.as_str().is_some_and(|t| t.contains("sup: alive") && !t.contains("w1: alive")).then_some(())
    });
    b.screenshot(&out.join("4-orphaned.png"));

    let mut w2 = start(&["work", root, "--runner", "w2", "recover", &hid, "--pace", "0.02"]);
    let (_, _, fence) = wait_some("running under w2", 20.0, || {
        let d = detail(&mut b);
        (d.0 == "running" && d.1 == "w2").then_some(d)
    });
    assert_eq!(fence.parse::<i64>().unwrap(), orphan_fence.parse::<i64>().unwrap() + 1, "the recovery's fence");
    b.screenshot(&out.join("5-running-w2.png"));
    assert!(w2.wait().unwrap().success(), "the recovery completes");
    wait_some("completed", 20.0, || (detail(&mut b).0 == "completed").then_some(()));
    b.screenshot(&out.join("6-completed.png"));
    let owners =
        b.eval("[...document.querySelectorAll('#detail-owners tbody tr')].map(tr => tr.children[2].textContent)");
    let owners: Vec<&str> = owners.as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(owners.contains(&"w1") && owners.contains(&"w2"), "owners seen: {owners:?}");

    // the whole run on one page load, every step seen in order
    assert_eq!(b.eval("window.__no_reload"), "still here", "the page reloaded");
    let seen = b.eval("window.__seen");
    let steps: Vec<(String, String)> = seen
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s[0].as_str().unwrap_or("").to_string(), s[1].as_str().unwrap_or("").to_string()))
        .collect();
    let want = [("running", "w1"), ("orphaned", "__orphaned__"), ("running", "w2"), ("completed", "")];
    let mut it = steps.iter();
    for (s, h) in want {
        assert!(it.any(|(ss, hh)| ss == s && (h.is_empty() || hh == h)), "{s}/{h} not seen in order: {steps:?}");
    }
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(sup.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    assert!(sup.wait().unwrap().success());
}
