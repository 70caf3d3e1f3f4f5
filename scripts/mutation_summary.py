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
`FILE:*: replace < with > in F` survives line moves); a survivor
without a note counts against the observable score.

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
        for k in KINDS:
            for name in lines(os.path.join(src, k + ".txt")):
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
        for k in KINDS:
            kinds[k] += lines(os.path.join(src, k + ".txt"))
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

    tested = [n for n in status if status[n] != "unviable"]

    def note(n):
        if n in notes:
            return notes[n]
        for k, v in notes.items():
            # `*` matches anything (line numbers move; a whole file is `FILE:*`)
            if "*" in k and re.fullmatch(".*".join(re.escape(p) for p in k.split("*")), n):
                return v
        return None

    caught = [n for n in tested if status[n] in ("caught", "timeout")]
    missed = [n for n in tested if status[n] == "missed"]
    unobservable = [n for n in missed if note(n)]
    caught_before = [n for n in caught if status[n] == "timeout" or failed_by[n] & BEFORE or not failed_by[n]]
    observable = len(tested) - len(unobservable)

    def pct(a, b):
        return round(100.0 * a / b, 1) if b else None

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
    after_caught = [n for n in tested if status[n] in ("caught", "timeout") or retest.get(n) in ("caught", "timeout")]
    after_unobservable = [n for n in unobservable if retest.get(n) not in ("caught", "timeout")]
    after_observable = len(tested) - len(after_unobservable)
    after = pct(len(after_caught), after_observable) if retest else None
    sample = len(status) < len(listed)
    score = {
        "mutants_in_scope": len(listed),
        "tested": len(status),
        "sample": sample,
        "unviable": len([n for n in status if status[n] == "unviable"]),
        "caught": len(caught),
        "timeouts": len([n for n in status if status[n] == "timeout"]),
        "missed": len(missed),
        "missed_not_observable": len(unobservable),
        "missed_observable": len(missed) - len(unobservable),
        "score_all_percent": pct(len(caught), len(tested)),
        "score_observable_percent": pct(len(caught), observable),
        "score_observable_95ci_percent": wilson(len(caught), observable) if sample else None,
        "score_observable_old_assertions_percent": pct(len(caught_before), observable),
        "score_observable_after_retest_percent": after,
        "score_observable_after_retest_95ci_percent": wilson(len(after_caught), after_observable) if retest and sample else None,
        "retested": len(retest),
        "retest_caught": len([n for n in retest if retest[n] in ("caught", "timeout")]),
        "median_build_seconds": median([build[n] for n in status if n in build]),
        "median_test_seconds": median([test[n] for n in status if n in test]),
    }
    if not write_summary:
        return
    with open(os.path.join(out, "score.json"), "w") as f:
        json.dump(score, f, indent=2)
        f.write("\n")
    md = ["# Mutation score of the conformance suite", "",
          "Generated by `scripts/mutation_score.sh` (cargo-mutants over dhp-core's runner, supervisor, store backends,",
          "envelope and transport log; the only test is `dhp-conform/tests/protocol_suite.rs`).", ""]
    if sample:
        md += [f"**A sample, not the full run**: {len(status)} of the {len(listed)} mutants in scope were tested "
               "(round-robin shards, an unbiased sample). `score_observable_95ci_percent` is the 95% Wilson",
               "interval for the score a full run would measure.", ""]
    md += ["| figure | value |", "|---|---|"]
    for k, v in score.items():
        md.append(f"| {k} | {v} |")
    md += ["", "`score_observable_old_assertions_percent` counts a mutant as caught only if an assertion that existed",
           "before approval-gates & co. failed on it. `score_observable_after_retest_percent` is the score once the",
           "survivors were re-tested (`mutation_score.sh --retest`) after assertions were added for them.",
           "", "## Caught", "", "| mutant | failing assertions |", "|---|---|"]
    for n in sorted(caught):
        ids = ", ".join(sorted(failed_by[n])) or ("(timeout)" if status[n] == "timeout" else "?")
        md.append(f"| `{n}` | {ids} |")
    md += ["", "## Survivors", "", "| mutant | re-test | why it is not observable (or: not yet asserted) |",
           "|---|---|---|"]
    for n in sorted(missed):
        if n in retest:
            again = retest[n] + (" by " + ", ".join(sorted(retest_ids.get(n, ()))) if retest_ids.get(n) else "")
        else:
            again = "—"
        why = note(n) or ("(now asserted)" if retest.get(n) in ("caught", "timeout")
                          else "**observable: no assertion catches it yet**")
        md.append(f"| `{n}` | {again} | {why} |")
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
    elif args[:1] == ["--merge"]:
        if len(args) < 3:
            sys.exit("usage: mutation_summary.py --merge DIR SHARD...")
        merge(args[1], args[2:])
        main(args[1])
    else:
        main(args[0] if args else "dhp-conform/mutation")
