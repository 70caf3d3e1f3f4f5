#!/usr/bin/env python3
"""Summarise a cargo-mutants run of the conformance suite (see
mutation_score.sh): DIR/mutants.out -> DIR/summary.md and DIR/score.json.

Per mutant: caught (the suite failed), missed (it passed), timeout (it hung:
counted as caught), unviable (did not build: not counted). For caught
mutants the failing assertion ids are read from the test's
`FAILED-ASSERTIONS:` line, which gives the score the suite had before this
set of assertions was added (BEFORE: the ids that existed then).
DIR/notes.tsv (mutant name, TAB, why it is not observable) annotates the
survivors (`*` in a name matches anything: `FILE:*` is a whole file,
`FILE:*: replace < with > in F` survives line moves; a name that starts
with `unreached ` applies only to mutants the suite never reaches, for
reasons of the kind "no adapter request calls this"); a survivor without
a note counts against the observable score.

The failing assertion ids and each mutant's build and test times are also
written to DIR/failing.tsv, which is committed (cargo-mutants' logs are
not), so a later summary without the logs keeps them.

    mutation_summary.py [DIR]                   summarise DIR/mutants.out
    mutation_summary.py --merge DIR SHARD...    merge the shards' mutants.out
                                                (each SHARD/mutants.out, from
                                                `mutation_score.sh i/K`) into
                                                DIR/mutants.out, then summarise

DIR/retest/mutants.out (from `mutation_score.sh --retest FILE`: the
survivors re-tested after assertions were added for them) gives the score
after: a re-tested mutant counts with its re-test outcome.

The score's interval is a 95% Wilson interval: when not every mutant in
scope was tested (a shard or a few of them: round-robin shards are an
unbiased sample), it bounds the score the full run would have.
"""
import json
import math
import os
import re
import shutil
import sys

BEFORE = {
    "no-lost-results", "no-crossed-inputs", "no-untyped-results", "no-silent-budget-overrun", "no-runner-lock-in",
    "exactly-one-wins", "fencing", "leader-election", "transport", "dead-letter-queue", "lease-expiry-lease-lost",
    "heartbeat-extends-lease", "release-to-pending", "idempotent-complete", "ack-after-complete", "claim-race",
    "tampered-bundle-rejected", "tampered-log-rejected", "tampered-checkpoint-rejected", "truncated-log-line-tolerated",
    "newer-schema-refused", "oversize-rejected", "malformed-ids-rejected", "stall-orphan-then-dlq",
    "supervisor-budget-kill", "effects-first-write-wins", "capabilities-fail-closed", "canonical-vectors",
    "fast-death-detection", "cross-store", "cross-log", "cross-bundle",
}


def lines(path):
    try:
        with open(path) as f:
            return [l.rstrip("\n") for l in f if l.strip()]
    except FileNotFoundError:
        return []


KINDS = ("caught", "missed", "timeout", "unviable")


def reach(out, lcov):
    """OUT/reach.tsv from an lcov file of the instrumented suite runs
    (mutation_reach.sh): per mutant of OUT/all-mutants.txt, the execution
    count of its line, or "-" where the line carries no counter."""
    root = os.getcwd()
    counts = {}
    cur = None
    with open(lcov) as f:
        for l in f:
            l = l.strip()
            if l.startswith("SF:"):
                cur = os.path.relpath(l[3:], root) if os.path.isabs(l[3:]) else l[3:]
            elif l.startswith("DA:") and cur:
                ln, c = l[3:].split(",")[:2]
                key = (cur, int(ln))
                counts[key] = counts.get(key, 0) + int(c)
    rows = []
    for name in lines(os.path.join(out, "all-mutants.txt")):
        m = re.match(r"^([^:]+):(\d+):\d+: ", name)
        c = counts.get((m.group(1), int(m.group(2)))) if m else None
        rows.append((name, "-" if c is None else str(c)))
    with open(os.path.join(out, "reach.tsv"), "w") as f:
        f.write("# mutant\texecutions of its line in the instrumented suite runs (- = no counter on the line: tested)"
                " (written by mutation_summary.py --reach)\n")
        f.writelines(f"{n}\t{c}\n" for n, c in rows)
    zero = sum(1 for _, c in rows if c == "0")
    print(f"reach: {len(rows)} mutants, {zero} on lines the suite never runs, "
          f"{sum(1 for _, c in rows if c == '-')} on lines without a counter", file=sys.stderr)


def tested_names(out):
    """Every mutant name an outcome is on record for: the merged run and
    every shard (a shard may not be merged yet)."""
    got = set()
    dirs = [os.path.join(out, "mutants.out")]
    shards = os.path.join(out, "shards")
    if os.path.isdir(shards):
        dirs += [os.path.join(shards, d, "mutants.out") for d in sorted(os.listdir(shards))]
    for d in dirs:
        for k in KINDS:
            got |= set(lines(os.path.join(d, k + ".txt")))
    return got


def draw(out, n, seed):
    """N mutants drawn at random (seeded) from those of all-mutants.txt that
    the suite reaches (reach.tsv) and that have no outcome yet: a tested
    name that is still listed is that mutant; one that is not (its lines
    moved since) is matched without line and column. Two mutants of one
    file with the same mutation at different lines are two mutants.
    Printed one a line."""
    import random
    listed = lines(os.path.join(out, "all-mutants.txt"))
    tested = set(tested_names(out))
    # a moved outcome stands for the one listed mutant of its file and
    # mutation; where several are listed, which one it was is unknown
    untested = {}
    for x in listed:
        if x not in tested:
            untested.setdefault(unlocated(x), []).append(x)
    moved = {unlocated(x) for x in tested - set(listed)}
    moved = {u for u in moved if len(untested.get(u, [])) == 1}
    skip = unreached_of(out)
    pool = [x for x in listed if x not in skip and x not in tested and unlocated(x) not in moved]
    random.Random(seed).shuffle(pool)
    print(f"draw: {min(n, len(pool))} of the {len(pool)} reached mutants without an outcome (seed {seed})",
          file=sys.stderr)
    for x in pool[:n]:
        print(x)


def unreached_of(out):
    """The mutants reach.tsv puts on lines the suite never runs."""
    got = set()
    for l in lines(os.path.join(out, "reach.tsv")):
        if not l.startswith("#"):
            f = l.split("\t")
            if len(f) == 2 and f[1] == "0":
                got.add(f[0])
    return got


def keep(shard):
    """The names a sample shard drew (SHARD/drawn.txt), or None for a
    round-robin shard. cargo-mutants' --re can select a neighbour of a
    drawn mutant too; only the drawn ones count, so the sample stays
    random."""
    path = os.path.join(shard, "drawn.txt")
    return set(lines(path)) if os.path.exists(path) else None


def merge(out, shards):
    """Concatenate the shards' outcome lists into OUT/mutants.out. Logs
    and diffs move under log/<shard>/ and diff/<shard>/: cargo-mutants
    names them by file, line and column, which two shards can share."""
    mo = os.path.join(out, "mutants.out")
    # refuse overlapping or unfinished shards before touching the merge
    seen = set()
    for shard in shards:
        src = os.path.join(shard, "mutants.out")
        if not os.path.isdir(src):
            sys.exit(f"{shard}: no mutants.out (not a finished shard)")
        drawn = keep(shard)
        for k in KINDS:
            for name in lines(os.path.join(src, k + ".txt")):
                if drawn is not None and name not in drawn:
                    continue
                if name in seen:
                    sys.exit(f"{shard}: mutant tested in two shards: {name}")
                seen.add(name)
    if os.path.exists(mo):
        shutil.rmtree(mo)
    os.makedirs(mo)
    kinds = {k: [] for k in KINDS}
    outcomes = []
    mutants = []
    for shard in shards:
        src = os.path.join(shard, "mutants.out")
        tag = os.path.basename(os.path.normpath(shard))
        drawn = keep(shard)
        for k in KINDS:
            kinds[k] += [n for n in lines(os.path.join(src, k + ".txt")) if drawn is None or n in drawn]
        try:
            with open(os.path.join(src, "mutants.json")) as f:
                mutants += json.load(f)
        except (FileNotFoundError, ValueError):
            pass
        try:
            with open(os.path.join(src, "outcomes.json")) as f:
                shard_outcomes = json.load(f).get("outcomes", [])
        except (FileNotFoundError, ValueError):
            shard_outcomes = []
        for o in shard_outcomes:
            sc = o.get("scenario")
            if not (isinstance(sc, dict) and "Mutant" in sc):
                continue
            if drawn is not None and sc["Mutant"].get("name") not in drawn:
                continue
            for key, sub in (("log_path", "log"), ("diff_path", "diff")):
                rel = o.get(key)
                if not rel:
                    continue
                new = os.path.join(sub, tag, os.path.basename(rel))
                if os.path.exists(os.path.join(src, rel)):
                    os.makedirs(os.path.join(mo, sub, tag), exist_ok=True)
                    shutil.copy(os.path.join(src, rel), os.path.join(mo, new))
                o[key] = new
            outcomes.append(o)
    for k in KINDS:
        with open(os.path.join(mo, k + ".txt"), "w") as f:
            f.write("".join(n + "\n" for n in sorted(kinds[k])))
    with open(os.path.join(mo, "outcomes.json"), "w") as f:
        json.dump({"outcomes": outcomes, "shards": [os.path.basename(os.path.normpath(s)) for s in shards]}, f, indent=2)
    with open(os.path.join(mo, "mutants.json"), "w") as f:
        json.dump(mutants, f, indent=2)


def unlocated(name):
    """A mutant's name without its line and column (`FILE:LINE:COL: what`
    -> `FILE: what`): the same mutation after lines moved."""
    return re.sub(r"^([^:]+):\d+:\d+: ", r"\1: ", name)


def wilson(k, n, z=1.96):
    """95% Wilson score interval for k successes in n trials, in percent."""
    if not n:
        return None
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return [round(100 * max(0.0, c - h), 1), round(100 * min(1.0, c + h), 1)]


def median(xs):
    xs = sorted(xs)
    if not xs:
        return None
    m = len(xs) // 2
    return round(xs[m] if len(xs) % 2 else (xs[m - 1] + xs[m]) / 2, 1)


def keep_earlier(dest, earlier):
    """Merge the outcome lists of an earlier re-test (EARLIER/*.txt) into
    DEST/mutants.out: a mutant the new run did not test keeps its earlier
    outcome."""
    mo = os.path.join(dest, "mutants.out")
    now = set()
    for kind in KINDS:
        now |= set(lines(os.path.join(mo, kind + ".txt")))
    for kind in KINDS:
        old = [n for n in lines(os.path.join(earlier, kind + ".txt")) if n not in now]
        if old:
            with open(os.path.join(mo, kind + ".txt"), "a") as f:
                f.write("".join(n + "\n" for n in old))


def retest_only(out):
    """failing.tsv for a re-test run, then the parent's summary."""
    main(out, write_summary=False)
    main(os.path.dirname(os.path.normpath(out)))


def main(out, write_summary=True):
    mo = os.path.join(out, "mutants.out")
    status = {}
    for kind in KINDS:
        for name in lines(os.path.join(mo, kind + ".txt")):
            status[name] = kind
    listed = lines(os.path.join(out, "all-mutants.txt"))
    # failing.tsv: mutant, TAB, failing ids (comma-separated), TAB, build s, TAB, test s
    known = {}
    for l in lines(os.path.join(out, "failing.tsv")):
        if not l.startswith("#"):
            f = l.split("\t")
            if len(f) == 4:
                known[f[0]] = f[1:]
    logs, build, test = {}, {}, {}
    try:
        with open(os.path.join(mo, "outcomes.json")) as f:
            for o in json.load(f).get("outcomes", []):
                sc = o.get("scenario")
                if isinstance(sc, dict) and "Mutant" in sc:
                    name = sc["Mutant"]["name"]
                    logs[name] = os.path.join(mo, o.get("log_path", ""))
                    for ph in o.get("phase_results", []):
                        d = {"Build": build, "Test": test}.get(ph.get("phase"))
                        if d is not None:
                            d[name] = ph.get("duration", 0.0)
    except (FileNotFoundError, ValueError):
        pass
    notes = {}
    for l in lines(os.path.join(out, "notes.tsv")):
        if "\t" in l and not l.startswith("#"):
            k, v = l.split("\t", 1)
            notes[k] = v
    failed_by = {}
    for name in status:
        path = logs.get(name)
        ids = None
        if path and os.path.isfile(path):
            ids = set()
            with open(path, errors="replace") as f:
                for l in f:
                    m = re.search(r"FAILED-ASSERTIONS: (.*)", l)
                    if m:
                        ids |= {x for x in m.group(1).strip().split(",") if x}
        elif name in known:
            ids = {x for x in known[name][0].split(",") if x}
            if known[name][1]:
                build.setdefault(name, float(known[name][1]))
            if known[name][2]:
                test.setdefault(name, float(known[name][2]))
        failed_by[name] = ids or set()
    with open(os.path.join(out, "failing.tsv"), "w") as f:
        f.write("# mutant\tfailing assertion ids\tbuild seconds\ttest seconds (written by mutation_summary.py)\n")
        for n in sorted(status):
            b = f"{build[n]:.1f}" if n in build else ""
            t = f"{test[n]:.1f}" if n in test else ""
            f.write(f"{n}\t{','.join(sorted(failed_by[n]))}\t{b}\t{t}\n")

    def pct(a, b):
        return round(100.0 * a / b, 1) if b else None

    # Two strata. Unreached: mutants on lines the instrumented suite never
    # runs (reach.tsv): survivors for certain, all of them counted, none
    # built. Reached: the rest, tested (all, or a random sample).
    unreached_now = unreached_of(out) & set(listed)
    # A tested mutant is the listed one of its name, else the one listed
    # mutant of its file and mutation (lines moved since it was tested);
    # with several candidates it is unreached only if all of them are.
    listed_at = {}
    for n in listed:
        listed_at.setdefault(unlocated(n), []).append(n)
    matched, in_unreached = set(), set()
    for n in list(status):
        cands = [n] if n in listed else listed_at.get(unlocated(n), [])
        if len(cands) == 1:
            matched.add(cands[0])
        if cands and all(c in unreached_now for c in cands):
            in_unreached.add(n)
    for n in unreached_now - matched:
        status[n] = "unreached"
        in_unreached.add(n)

    def matches(k, n):
        # `*` matches anything (line numbers move; a whole file is `FILE:*`)
        return k == n or ("*" in k and re.fullmatch(".*".join(re.escape(p) for p in k.split("*")), n))

    def note(n):
        """Why survivor n is not observable, or None. A key that starts
        with "unreached " applies only to mutants the suite never reaches
        (reach.tsv): a reason that the suite does not run that code."""
        for k, v in notes.items():
            if not k.startswith("unreached ") and matches(k, n):
                return v
        if n in in_unreached:
            for k, v in notes.items():
                if k.startswith("unreached ") and matches(k[len("unreached "):], n):
                    return v
        return None

    # a tested mutant the reach analysis calls unreached must have survived
    contradictions = sorted(n for n in in_unreached if status[n] in ("caught", "timeout"))

    tested = [n for n in status if status[n] != "unviable"]
    caught = [n for n in tested if status[n] in ("caught", "timeout")]
    missed = [n for n in tested if status[n] in ("missed", "unreached")]
    unobservable = [n for n in missed if note(n)]
    caught_before = [n for n in caught if status[n] == "timeout" or failed_by[n] & BEFORE or not failed_by[n]]

    # the re-test of survivors (after new assertions): their outcome now
    retest, retest_ids = {}, {}
    rmo = os.path.join(out, "retest", "mutants.out")
    for kind in KINDS:
        for name in lines(os.path.join(rmo, kind + ".txt")):
            retest[name] = kind
    for l in lines(os.path.join(out, "retest", "failing.tsv")):
        f = l.split("\t")
        if len(f) == 4 and not l.startswith("#"):
            retest_ids[f[0]] = set(x for x in f[1].split(",") if x)
    # A re-test names mutants as the tree had them then: lines may have
    # moved since the sample. Each counts for the sampled mutant of the same
    # name, else for the one sampled mutant with the same file and mutation
    # (line and column aside). cargo-mutants' --re can select a neighbour
    # too: mutants outside this run's sample do not count.
    by_place = {}
    for n in status:
        by_place.setdefault(unlocated(n), []).append(n)
    same = {}
    for n in retest:
        if n in status:
            same[n] = n
        elif len(by_place.get(unlocated(n), [])) == 1:
            same[n] = by_place[unlocated(n)][0]
    retest_ids = {same[n]: ids for n, ids in retest_ids.items() if n in same}
    retest = {same[n]: k for n, k in retest.items() if n in same}

    def stratum(names, after):
        """(caught, observable survivors, unobservable survivors) of names."""
        c = [n for n in names if status[n] in ("caught", "timeout")
             or (after and retest.get(n) in ("caught", "timeout"))]
        u = [n for n in names if n not in c and status[n] in ("missed", "unreached") and note(n)]
        return len(c), len(names) - len(c) - len(u), len(u)

    reached_tested = [n for n in tested if n not in in_unreached]
    unreached_all = [n for n in tested if n in in_unreached]
    n_reached = len(set(listed) - unreached_now)
    reached_viable = len(reached_tested)
    reached_unviable = len([n for n in status if status[n] == "unviable" and n not in in_unreached])
    sample = reached_viable + reached_unviable < n_reached

    def estimate(after):
        """The full run's observable score: the reached stratum's rate from
        the sample, the unreached stratum's observable survivors exactly,
        and the reached rate's 95% Wilson interval carried through."""
        c, m, u = stratum(reached_tested, after)
        _, um, _ = stratum(unreached_all, after)
        obs = c + m
        if not obs:
            return None, None
        # reached, viable, observable mutants a full run would count
        scale = n_reached * (reached_viable / (reached_viable + reached_unviable)) / reached_viable
        est_obs = obs * scale
        share = est_obs / (est_obs + um)
        point = round(100.0 * c / obs * share, 1)
        if not sample:
            return point, None
        lo, hi = wilson(c, obs)
        return point, [round(lo * share, 1), round(hi * share, 1)]

    est, est_ci = estimate(False)
    after_est, after_ci = estimate(True)
    rc, rm, ru = stratum(reached_tested, False)
    ac, am, au = stratum(reached_tested, True)
    uc, um, uu = stratum(unreached_all, False)
    _, aum, _ = stratum(unreached_all, True)
    score = {
        "mutants_in_scope": len(listed),
        "unreached": len(unreached_now),
        "unreached_not_observable": uu,
        "unreached_observable": um,
        "reached": n_reached,
        "reached_tested": reached_viable + reached_unviable,
        "sample": sample,
        "unviable": reached_unviable,
        "caught": rc,
        "timeouts": len([n for n in status if status[n] == "timeout"]),
        "missed": rm + ru,
        "missed_not_observable": ru,
        "missed_observable": rm,
        "reach_contradictions": len(contradictions),
        "score_reached_observable_percent": pct(rc, rc + rm),
        "score_reached_observable_95ci_percent": wilson(rc, rc + rm) if sample else None,
        "score_observable_percent": est,
        "score_observable_95ci_percent": est_ci,
        "score_observable_old_assertions_percent": pct(
            len([n for n in caught_before if n in reached_tested]), rc + rm),
        "score_observable_after_retest_percent": after_est if retest else None,
        "score_observable_after_retest_95ci_percent": after_ci if retest else None,
        "unreached_observable_after_retest": aum,
        "retested": len(retest),
        "retest_caught": len([n for n in retest if retest[n] in ("caught", "timeout")]),
        "median_build_seconds": median([build[n] for n in status if n in build]),
        "median_test_seconds": median([test[n] for n in status if n in test]),
    }
    del ac, am, au, uc
    if not write_summary:
        return
    with open(os.path.join(out, "score.json"), "w") as f:
        json.dump(score, f, indent=2)
        f.write("\n")
    md = ["# Mutation score of the conformance suite", "",
          "Generated by `scripts/mutation_score.sh` (cargo-mutants over dhp-core's runner, supervisor, store backends,",
          "envelope and transport log; the only test is `dhp-conform/tests/it/protocol_suite.rs`).", ""]
    md += [f"**Unreached**: {len(unreached_now)} of the {len(listed)} mutants in scope sit on lines the suite never "
           "runs (`reach.tsv`, from `scripts/mutation_reach.sh`): they survive for certain and are counted without a "
           "build; each needs a note (not observable) or an assertion like any survivor.", ""]
    if sample:
        md += [f"**Reached: a sample, not the full run**: {reached_viable + reached_unviable} of the {n_reached} "
               "reached mutants were tested (round-robin shards and seeded random draws: an unbiased sample).",
               "`score_observable_percent` estimates the full run's score: the reached sample's rate, weighted by "
               "the reached stratum's size against the unreached observable survivors, which are counted exactly; "
               "its interval carries the reached rate's 95% Wilson interval.", ""]
    md += ["| figure | value |", "|---|---|"]
    for k, v in score.items():
        md.append(f"| {k} | {v} |")
    md += ["", "`score_observable_old_assertions_percent` counts a mutant as caught only if an assertion that existed",
           "before approval-gates & co. failed on it. `score_observable_after_retest_percent` is the score once the",
           "survivors were re-tested (`mutation_score.sh --retest`) after assertions were added for them.",
           "`reach_contradictions` counts tested mutants the suite caught although their line is never run: it must",
           "be 0 for the unreached stratum to be trusted."]
    if contradictions:
        md += ["", "## Reach contradictions", ""] + [f"- `{n}`" for n in contradictions]
    md += ["", "## Caught", "", "| mutant | failing assertions |", "|---|---|"]
    for n in sorted(caught):
        ids = ", ".join(sorted(failed_by[n])) or ("(timeout)" if status[n] == "timeout" else "(not kept: the run's logs were lost)")
        md.append(f"| `{n}` | {ids} |")

    def why_of(n):
        return note(n) or ("(now asserted)" if retest.get(n) in ("caught", "timeout")
                           else "**observable: no assertion catches it yet**")

    md += ["", "## Survivors (tested)", "", "| mutant | re-test | why it is not observable (or: not yet asserted) |",
           "|---|---|---|"]
    for n in sorted(x for x in missed if status[x] == "missed"):
        if n in retest:
            again = retest[n] + (" by " + ", ".join(sorted(retest_ids.get(n, ()))) if retest_ids.get(n) else "")
        else:
            again = "—"
        md.append(f"| `{n}` | {again} | {why_of(n)} |")
    never = sorted(x for x in missed if status[x] == "unreached")
    by_why = {}
    for n in never:
        by_why.setdefault(why_of(n), []).append(n)
    md += ["", "## Unreached survivors (not built: the suite never runs their line)", "",
           "| mutants | why it is not observable (or: not yet asserted) |", "|---|---|"]
    for why, ns in sorted(by_why.items(), key=lambda kv: (not kv[0].startswith("**"), -len(kv[1]))):
        if why.startswith("**") or len(ns) <= 3:
            md += [f"| `{n}` | {why} |" for n in ns]
        else:
            files = sorted({n.split(":")[0] for n in ns})
            md.append(f"| {len(ns)} mutants in {', '.join('`' + f + '`' for f in files)} | {why} |")
    unv = sorted(n for n in status if status[n] == "unviable")
    if unv:
        md += ["", "## Unviable (did not build)", ""] + [f"- `{n}`" for n in unv]
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print(json.dumps(score))


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--retest"]:
        # a re-test directory: its own failing.tsv only (read by the parent's summary)
        retest_only(args[1] if len(args) > 1 else "dhp-conform/mutation/retest")
    elif args[:1] == ["--keep-earlier"]:
        if len(args) != 3:
            sys.exit("usage: mutation_summary.py --keep-earlier RETEST_DIR EARLIER_LISTS_DIR")
        keep_earlier(args[1], args[2])
    elif args[:1] == ["--draw"]:
        if len(args) != 4 or not args[2].isdigit() or not args[3].isdigit():
            sys.exit("usage: mutation_summary.py --draw DIR N SEED")
        draw(args[1], int(args[2]), int(args[3]))
    elif args[:1] == ["--reach"]:
        if len(args) != 3:
            sys.exit("usage: mutation_summary.py --reach DIR LCOV")
        reach(args[1], args[2])
        main(args[1])
    elif args[:1] == ["--merge"]:
        if len(args) < 3:
            sys.exit("usage: mutation_summary.py --merge DIR SHARD...")
        merge(args[1], args[2:])
        main(args[1])
    else:
        main(args[0] if args else "dhp-conform/mutation")
