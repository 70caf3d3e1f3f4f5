//! Phase `page-source`: network namespaces (with `--netns`) and the mirror
//! or Wikipedia.

use super::*;

/// Returns the base URL host A and host B fetch from.
pub(super) fn page_source(
    cx: &mut Ctx,
    run: &mut Run,
    titles: &[String],
    delays: (u64, u64),
) -> anyhow::Result<(String, String)> {
    let (pages, kill_at) = (cx.args.pages, cx.args.kill_at);
    if cx.args.netns {
        let ns = NetNs::create(std::process::id())?;
        cx.ui.say(&format!(
            "netns: host A = {} ({}), host B = {} ({}), veth {}<->{} (/30 only inside the namespaces)",
            ns.ns_a, ns.addr_a, ns.ns_b, ns.addr_b, ns.veth_a, ns.veth_b
        ));
        cx.fact(
            "network",
            json!({"ns_a": ns.ns_a, "ns_b": ns.ns_b, "addr_a": ns.addr_a.to_string(),
                   "addr_b": ns.addr_b.to_string(), "veth_a": ns.veth_a, "veth_b": ns.veth_b}),
        );
        run.netns = Some(ns);
    }
    let (base_a, base_b) = match cx.args.source {
        Source::Mirror => {
            let listeners = match &run.netns {
                Some(ns) => vec![ns.loopback_listener(Host::A)?, ns.loopback_listener(Host::B)?],
                None => vec![Mirror::loopback_listener()?],
            };
            let m = Mirror::start(
                MirrorConfig {
                    seed: cx.seed,
                    titles: titles.to_vec(),
                    min_delay_ms: delays.0,
                    max_delay_ms: delays.1,
                    hold: Some(titles[kill_at].clone()),
                    hold_timeout: cx.phase_timeout(),
                },
                listeners,
            )?;
            let (a, b) = (m.base_url(0), m.base_url(m.addrs().len() - 1));
            cx.ui.say(&format!(
                "mirror: {a}{} ({} pages, {}-{} ms per response{})",
                mirror::SUMMARY_PREFIX,
                pages,
                delays.0,
                delays.1,
                if run.netns.is_some() { format!("; host B sees it at {b}") } else { String::new() }
            ));
            run.mirror = Some(m);
            (a, b)
        }
        Source::Wikipedia => {
            let base = "https://en.wikipedia.org".to_string();
            let f = fetch::Fetcher::new(&base, Duration::from_secs(15));
            f.fetch(&titles[0])
                .map_err(|e| usage!("cannot reach en.wikipedia.org ({e:#}); run offline with --source mirror"))?;
            cx.ui.say("source: https://en.wikipedia.org/api/rest_v1/page/summary/{title} (reachable)");
            (base.clone(), base)
        }
    };
    cx.fact("titles", json!(titles));
    Ok((base_a, base_b))
}
