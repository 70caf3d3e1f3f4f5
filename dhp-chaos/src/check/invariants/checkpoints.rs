//! checkpoints: seqs continuous 0..n-1, hashes valid, each state is the
//! census up to its next_n (no rework, nothing skipped).

use crate::check::ctx::Ctx;
use crate::check::findings::Findings;
use crate::check::{opt, short};

pub(super) fn check(cx: &Ctx<'_>) -> Findings {
    let mut out = Findings::default();
    for (hid, f) in cx.hids.iter().filter_map(|hid| cx.facts.get(hid).map(|f| (hid, f))) {
        let h = f.h;
        out.checked += h.ckpts.len() as u64;
        for (k, c) in h.ckpts.iter().enumerate() {
            if c.seq != k as i64 {
                out.of(hid, format!("{}: seq gap/duplicate: position {k} holds seq {}", short(hid), c.seq));
                break;
            }
            let hash = dhp_oracle::sha256_hex(c.state_json.as_bytes());
            if hash != c.state_hash {
                out.of(hid, format!("{}: seq {} state_hash does not match state_json", short(hid), c.seq));
            }
            let got = (c.state["next_n"].as_u64(), c.state["count"].as_u64(), c.state["total"].as_u64());
            match f.exp_chain.get(k) {
                Some(&(n, cnt, tot)) if got == (Some(n), Some(cnt), Some(tot)) => {}
                Some(&(n, cnt, tot)) => {
                    out.of(hid, format!(
                        "{}: seq {k} is {{next_n {}, count {}, total {}}}, the census says {{{n}, {cnt}, {tot}}} (rework or a wrong resume point)",
                        short(hid), opt(got.0), opt(got.1), opt(got.2)
                    ));
                    break;
                }
                None => {
                    out.of(
                        hid,
                        format!(
                            "{}: seq {k} is beyond the last chunk ({} chunks): work was redone",
                            short(hid),
                            f.exp_chain.len()
                        ),
                    );
                    break;
                }
            }
        }
        if h.status == "completed" && h.ckpts.len() != f.exp_chain.len() {
            out.of(
                hid,
                format!(
                    "{}: completed with {} checkpoints, the census has {} chunks",
                    short(hid),
                    h.ckpts.len(),
                    f.exp_chain.len()
                ),
            );
        }
    }
    out
}
