#!/usr/bin/env python3
"""Generate byte-exact test vectors from the Python reference (dhp 1.3.0).

Run with the reference venv:

    .venv/bin/python scripts/pyref/gen_vectors.py [--out DIR]

Writes (default DIR = <repo>/spec/vectors; the format of every file:
spec/vectors/README.md):

  canonical.json  -- [{name, input, canonical_hex, canonical_text,
                       sha256_canonical, [state_json, state_hash]}]
      input           JSON text exactly as written here (the Rust parser
                      must see the same text)
      canonical_hex   hex(dhp.envelope.canonical(json.loads(input)))
      canonical_text  the same bytes decoded as UTF-8 (for reading only)
      sha256_canonical sha256 hex of the canonical bytes
      state_json      json.dumps(value, sort_keys=True)   (dicts only)
      state_hash      sha256 hex of state_json UTF-8      (dicts only)

  envelopes.json  -- [{name, envelope_text, handoff_id, input_hash,
                       canonical_hex, spec_canonical_hex}]
      envelope_text   json.dumps(env) (Python defaults, insertion order)
      canonical_hex   hex(canonical(env))
      spec_canonical_hex hex(canonical(spec_of(env))) -- sha256 of it is
                      the handoff_id

  logs.json, bundles.json, tcp.json -- transport logs with the reference's
      ingest verdict, suspend bundles with its resume verdict, TCP sessions
      with its server's replies (vectors_wire.py)

Deterministic: created_at comes from a patched dhp.envelope.utcnow, and
trace ids derive from it, so re-running gives identical files.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile

import dhp
from dhp import envelope as E

assert dhp.__version__ == "1.3.0", dhp.__version__

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


# --------------------------------------------------------------------------
# canonical cases: (name, JSON text). The text is stored verbatim.
# Non-raw strings are used where the *text* must contain a raw character
# (é, emoji, U+2028, DEL); raw strings where it must contain an escape.
# --------------------------------------------------------------------------
CTRL_ALL = "".join("\\u%04x" % c for c in range(0x20))

CANONICAL_CASES = [
    # ---- floats ----
    ("float_1e16", '{"x": 1e16}'),
    ("float_1e15", '{"x": 1e15}'),
    ("float_1e15_plain", '{"x": 1000000000000000.0}'),
    ("float_9999999999999998", '{"x": 9999999999999998.0}'),
    ("float_123456789012345680", '{"x": 123456789012345680.0}'),
    ("float_1.5e-07", '{"x": 1.5e-07}'),
    ("float_1.5e-7_text", '{"x": 1.5e-7}'),
    ("float_1e-05", '{"x": 1e-05}'),
    ("float_0.0001", '{"x": 0.0001}'),
    ("float_0.00001_plain", '{"x": 0.00001}'),
    ("float_neg_zero", '{"x": -0.0}'),
    ("float_pos_zero", '{"x": 0.0}'),
    ("float_0e0", '{"x": 0e0}'),
    ("float_point1_plus_point2", '{"x": 0.30000000000000004}'),
    ("float_point1", '{"x": 0.1}'),
    ("float_1e308", '{"x": 1e308}'),
    ("float_max", '{"x": 1.7976931348623157e308}'),
    ("float_min_subnormal", '{"x": 5e-324}'),
    ("float_min_normal", '{"x": 2.2250738585072014e-308}'),
    ("float_2.5", '{"x": 2.5}'),
    ("float_10.0", '{"x": 10.0}'),
    ("float_1E5", '{"x": 1E5}'),
    ("float_1.0e+2", '{"x": 1.0e+2}'),
    ("float_100.0", '{"x": 100.0}'),
    ("float_1e22", '{"x": 1e22}'),
    ("float_neg_1e-7", '{"x": -1e-7}'),
    ("float_many_digits_rounds", '{"x": 1.00000000000000000001}'),
    ("float_17_sig_digits", '{"x": 123456789.123456789}'),
    ("float_2pow53_plus1_as_float", '{"x": 9007199254740993.0}'),
    ("float_5e-5", '{"x": 5e-5}'),
    ("float_E_upper_neg", '{"x": 2.5E-3}'),
    ("float_bare_top_level", "3.14159"),
    ("float_array_mix", "[1.0, 1, -1.0, 1e0, 1e1, 0.5, 1e-1, 1e-4, 1e-5, 1e15, 1e16, 1e17]"),
    # ---- integers ----
    ("int_0", '{"x": 0}'),
    ("int_neg_zero_text", '{"x": -0}'),
    ("int_neg_zero_top_level", "-0"),
    ("int_2pow53_plus1", '{"x": 9007199254740993}'),
    ("int_2pow63", '{"x": 9223372036854775808}'),
    ("int_2pow64", '{"x": 18446744073709551616}'),
    ("int_neg_2pow63_minus1", '{"x": -9223372036854775809}'),
    ("int_2pow70", '{"x": 1180591620717411303424}'),
    ("int_10pow40", '{"x": 10000000000000000000000000000000000000000}'),
    ("int_i64_min", '{"x": -9223372036854775808}'),
    ("int_u64_max", '{"x": 18446744073709551615}'),
    ("int_top_level", "42"),
    # ---- strings ----
    ("str_e_acute_raw", '{"s": "é"}'),
    ("str_e_acute_escaped", r'{"s": "\u00e9"}'),
    ("str_e_acute_escaped_upper", r'{"s": "\u00E9"}'),
    ("str_cjk_raw", '{"s": "中文"}'),
    ("str_emoji_raw", '{"s": "😀"}'),
    ("str_emoji_surrogate_escape", r'{"s": "\ud83d\ude00"}'),
    ("str_u2028_raw", '{"s": "a\u2028b"}'),
    ("str_u2028_escaped", r'{"s": "a\u2028b"}'),
    ("str_u2029_raw", '{"s": "a\u2029b"}'),
    ("str_u2029_escaped", r'{"s": "a\u2029b"}'),
    ("str_del_raw", '{"s": "a\x7fb"}'),
    ("str_del_escaped", r'{"s": "a\u007fb"}'),
    ("str_all_control_chars", '{"s": "' + CTRL_ALL + '"}'),
    ("str_short_escapes", r'{"s": "\b\f\n\r\t"}'),
    ("str_nul", r'{"s": "\u0000"}'),
    ("str_unit_sep_0x1f", r'{"s": "\u001f"}'),
    ("str_space_0x20", r'{"s": " "}'),
    ("str_quotes", r'{"s": "say \"hi\""}'),
    ("str_backslashes", r'{"s": "C:\\path\\to\\file \\\\"}'),
    ("str_slash_raw", '{"s": "a/b//c"}'),
    ("str_slash_escaped", r'{"s": "a\/b"}'),
    ("str_bmp_private_use", r'{"s": "\ue000\uffff"}'),
    ("str_mixed_unicode", '{"s": "naïve café 日本語 Ελληνικά עברית 🎉👍🏽"}'),
    ("str_zwj_sequence", '{"s": "👨\u200d👩\u200d👧"}'),
    ("str_bom", r'{"s": "\ufeffbom"}'),
    ("str_top_level", r'"top \u00e9 \n"'),
    ("str_empty", '{"s": ""}'),
    # ---- key ordering ----
    ("keys_ordering",
     '{"b": 1, "a": 2, "B": 3, "_": 4, "é": 5, "😀": 6, "10": 7, "9": 8}'),
    ("keys_astral_vs_bmp_high",
     '{"😀": 1, "\ue000": 2, "\uffff": 3, "z": 4, "~": 5, "\x7f": 6}'),
    ("keys_prefixes", '{"ab": 1, "a": 2, "abc": 3, "": 4, "a ": 5, "a\\u0000": 6}'),
    ("keys_case", '{"a": 1, "A": 2, "Z": 3, "z": 4, "_a": 5, "-a": 6}'),
    ("keys_escaped_in_input", r'{"\u0062": 1, "\u0061": 2}'),
    ("keys_nested_sorted", '{"z": {"y": 1, "x": [{"b": 1, "a": 2}]}, "a": null}'),
    # ---- duplicates (Python keeps the last) ----
    ("dup_keys_last_wins", '{"a": 1, "a": 2}'),
    ("dup_keys_nested", '{"o": {"k": "first", "k": "second"}, "o2": 1}'),
    ("dup_keys_type_change", '{"a": {"x": 1}, "b": 0, "a": [1, 2]}'),
    # ---- containers / literals ----
    ("empty_object", "{}"),
    ("empty_array", "[]"),
    ("empty_containers_nested", '{"a": {}, "b": [], "c": [{}, []], "d": {"e": {}}}'),
    ("bools_null", '{"t": true, "f": false, "n": null}'),
    ("top_true", "true"),
    ("top_false", "false"),
    ("top_null", "null"),
    ("array_mixed", '[1, "two", 3.0, true, null, {"k": "v"}, [], {}]'),
    ("whitespace_everywhere", ' \n\t{ "a" :\r\n [ 1 , 2 ] ,\t"b" : { } } \n'),
    ("deep_nesting_arrays_100", "[" * 100 + "]" * 100),
    ("deep_nesting_objects_60", '{"a":' * 60 + "0" + "}" * 60),
    ("deep_nesting_mixed",
     '{"a": [{"b": [{"c": [{"d": [1.5e-7, {"e": "\\u00e9"}]}]}]}]}'),
    ("realistic_inputs",
     '{"inline": {"lo": 0, "hi": 16000, "chunk": 100, "tags": ["x", "y"],'
     ' "ratio": 0.25, "note": "ok\\n"}}'),
    ("realistic_schema",
     '{"type": "object", "properties": {"prime_count": {"type": "integer"},'
     ' "prime_sum": {"type": "integer"}}, "required": ["prime_count"],'
     ' "additionalProperties": false}'),
]


def canonical_case(name: str, text: str) -> dict:
    value = json.loads(text)
    cb = E.canonical(value)
    case = {
        "name": name,
        "input": text,
        "canonical_hex": cb.hex(),
        "canonical_text": cb.decode("utf-8"),
        "sha256_canonical": sha(cb),
    }
    if isinstance(value, dict):
        sj = json.dumps(value, sort_keys=True)
        case["state_json"] = sj
        case["state_hash"] = sha(sj.encode("utf-8"))
    return case


# --------------------------------------------------------------------------
# envelopes
# --------------------------------------------------------------------------
_NOW = {"value": "2026-01-02T03:04:05.123456+00:00"}


def _fixed_utcnow() -> str:
    return _NOW["value"]


E.utcnow = _fixed_utcnow  # build() looks it up at call time

SCHEMA_X = {"type": "object", "properties": {"x": {"type": "integer"}},
            "required": ["x"]}
SCHEMA_PRIME = {"type": "object",
                "properties": {"lo": {"type": "integer"},
                               "hi": {"type": "integer"},
                               "prime_count": {"type": "integer"},
                               "prime_sum": {"type": "integer"},
                               "chunks_done": {"type": "integer"}},
                "required": ["prime_count", "prime_sum"]}
SCHEMA_UNICODE = {"type": "object",
                  "properties": {"résumé": {"type": "string",
                                            "pattern": "^[a-z]+\\d*$"},
                                 "😀": {"type": "number", "minimum": -0.5,
                                       "maximum": 1e16}},
                  "required": ["résumé"], "additionalProperties": False}
SCHEMA_ANY = {}


def _tricky(text: str):
    return json.loads(text)


ENVELOPE_CASES = [
    # (name, created_at, kwargs for E.build)
    ("build_minimal_defaults", "2026-01-02T03:04:05.123456+00:00",
     dict(task_kind="t", inputs={"inline": {"n": 1}},
          output_schema=SCHEMA_X)),
    ("build_created_at_no_micros", "2026-01-02T03:04:05+00:00",
     dict(task_kind="t", inputs={"inline": {"n": 1}},
          output_schema=SCHEMA_X)),
    ("build_explicit_trace_id", "2026-03-04T05:06:07.000001+00:00",
     dict(task_kind="math.solve",
          inputs={"inline": {"problem": "2+2", "want": "boxed"}},
          output_schema={"type": "object",
                         "properties": {"answer": {"type": "string"}},
                         "required": ["answer"]},
          budget={"max_steps": 10, "max_spend_usd": 1.0,
                  "max_wallclock_s": 300.0},
          trace_id="trace-0001")),
    ("build_floats_in_inputs", "2026-01-02T03:04:05.500000+00:00",
     dict(task_kind="float.mix",
          inputs=_tricky('{"a": 1e16, "b": 1e15, "c": 1.5e-07, "d": -0.0,'
                         ' "e": 0.30000000000000004, "f": 5e-324,'
                         ' "g": 1E5, "h": 1.0e+2, "i": 10.0, "j": 1e308,'
                         ' "k": 123456789012345680.0, "l": 1e-05,'
                         ' "m": 0.0001}'),
          output_schema=SCHEMA_ANY)),
    ("build_bigints_in_inputs", "2026-01-02T03:04:05.999999+00:00",
     dict(task_kind="int.big",
          inputs=_tricky('{"p53": 9007199254740993, "p63": 9223372036854775808,'
                         ' "m63": -9223372036854775809,'
                         ' "p70": 1180591620717411303424,'
                         ' "t40": 10000000000000000000000000000000000000000,'
                         ' "negzero": -0}'),
          output_schema=SCHEMA_ANY)),
    ("build_unicode_everywhere", "2026-01-02T03:04:05.010000+00:00",
     dict(task_kind="unicode.ü中😀",
          inputs=_tricky('{"é": "中文", "😀": "\\ud83d\\ude00",'
                         ' "ls": "a\u2028b\u2029c", "del": "\x7f",'
                         ' "ctl": "' + CTRL_ALL + '",'
                         ' "q": "\\"\\\\/", "b": 1, "a": 2, "B": 3,'
                         ' "_": 4, "10": 5, "9": 6}'),
          output_schema=SCHEMA_UNICODE,
          created_by="wörker/ü",
          idempotency_key="idem-é-😀")),
    ("build_dup_keys_inputs", "2026-01-02T03:04:05.000100+00:00",
     dict(task_kind="dup",
          inputs=_tricky('{"a": 1, "a": {"z": 1, "y": 2}}'),
          output_schema=SCHEMA_ANY)),
    ("build_empty_inputs", "2026-01-02T03:04:05.123000+00:00",
     dict(task_kind="empty", inputs={}, output_schema={})),
    ("build_all_fields", "2026-06-30T23:59:59.999999+00:00",
     dict(task_kind="full",
          inputs={"inline": {"lo": 0, "hi": 1000, "chunk": 50}},
          output_schema=SCHEMA_PRIME,
          budget={"max_steps": 7, "max_spend_usd": 2.5,
                  "max_wallclock_s": 60.0, "max_attempts": 4},
          deadline="2026-07-01T00:00:00+00:00",
          acceptance=["prime_count > 0", {"check": "sum", "min": 1}],
          parent_handoff_id="ab" * 32,
          trace_id="tr-ace_ID.1",
          created_by="orchestrator-1",
          idempotency_key="idem-key-1",
          max_stall_retries=0,
          capabilities={"network": ["api.stripe.com", "example.org"],
                        "filesystem": ["/tmp/work"]})),
    ("build_capabilities_only", "2026-01-02T03:04:05.123456+00:00",
     dict(task_kind="caps", inputs={"inline": {"n": 2}},
          output_schema=SCHEMA_X,
          capabilities={"network": ["api.example.com"]})),
    ("build_empty_capabilities_omitted", "2026-01-02T03:04:05.123456+00:00",
     dict(task_kind="caps", inputs={"inline": {"n": 2}},
          output_schema=SCHEMA_X, capabilities={})),
    ("build_max_stall_retries_5", "2026-01-02T03:04:05.123456+00:00",
     dict(task_kind="stall", inputs={"inline": {"n": 3}},
          output_schema=SCHEMA_X, max_stall_retries=5)),
    ("build_max_stall_retries_0_caps", "2026-01-02T03:04:05.123456+00:00",
     dict(task_kind="stall", inputs={"inline": {"n": 4}},
          output_schema=SCHEMA_X, max_stall_retries=0,
          capabilities={"dhp": ["*"], "filesystem": ["/a", "/b/é"]})),
    ("build_int_budget_values", "2026-01-02T03:04:05.123456+00:00",
     dict(task_kind="budget.ints", inputs={"inline": {"n": 5}},
          output_schema=SCHEMA_X,
          budget={"max_steps": 100, "max_spend_usd": 10,
                  "max_wallclock_s": 3600, "max_attempts": 3})),
    ("build_float_budget_values", "2026-01-02T03:04:05.123456+00:00",
     dict(task_kind="budget.floats", inputs={"inline": {"n": 6}},
          output_schema=SCHEMA_X,
          budget={"max_steps": 1e3, "max_spend_usd": 0.1,
                  "max_wallclock_s": 1e16, "max_attempts": 2,
                  "extra_field": [1.5e-07, None, True]})),
    ("build_partial_budget", "2026-01-02T03:04:05.123456+00:00",
     dict(task_kind="budget.partial", inputs={"inline": {"n": 7}},
          output_schema=SCHEMA_X, budget={"max_steps": 3})),
    ("build_empty_budget_uses_defaults", "2026-01-02T03:04:05.123456+00:00",
     dict(task_kind="budget.empty", inputs={"inline": {"n": 8}},
          output_schema=SCHEMA_X, budget={})),
    ("build_empty_acceptance_list", "2026-01-02T03:04:05.123456+00:00",
     dict(task_kind="acc", inputs={"inline": {"n": 9}},
          output_schema=SCHEMA_X, acceptance=[])),
    ("build_prime_census", "2026-01-02T03:04:05.123456+00:00",
     dict(task_kind="prime.census",
          inputs={"inline": {"lo": 0, "hi": 16000, "chunk": 100}},
          output_schema=SCHEMA_PRIME)),
    ("build_deep_inputs", "2026-01-02T03:04:05.123456+00:00",
     dict(task_kind="deep",
          inputs=_tricky('{"d": ' + "[" * 40 + '{"k": 1.5e-7}' + "]" * 40 + "}"),
          output_schema=SCHEMA_ANY)),
]

SDK_CASES = [
    # (name, created_at, kwargs for dhp.dispatch minus the store)
    ("sdk_default", "2026-01-02T03:04:05.123456+00:00",
     dict(task_kind="prime.census",
          inputs={"lo": 0, "hi": 16000, "chunk": 100},
          output_schema=SCHEMA_PRIME)),
    ("sdk_default_no_micros", "2026-02-03T04:05:06+00:00",
     dict(task_kind="prime.census", inputs={"lo": 0, "hi": 500, "chunk": 50},
          output_schema=SCHEMA_PRIME)),
    ("sdk_budget_override", "2026-01-02T03:04:05.123456+00:00",
     dict(task_kind="sdk.budget", inputs={"n": 1}, output_schema=SCHEMA_X,
          budget={"max_steps": 5, "max_attempts": 1})),
    ("sdk_capabilities_stall", "2026-01-02T03:04:05.123456+00:00",
     dict(task_kind="sdk.caps", inputs={"n": 2}, output_schema=SCHEMA_X,
          capabilities={"network": ["api.stripe.com"],
                        "filesystem": ["/tmp/work"]},
          max_stall_retries=7, created_by="my-app")),
    ("sdk_tricky_inputs", "2026-01-02T03:04:05.123456+00:00",
     dict(task_kind="sdk.tricky",
          inputs=_tricky('{"f": 1e16, "g": 1.5e-07, "z": -0.0, "i": 1180591620717411303424,'
                         ' "s": "é中😀\u2028\x7f\\u0001", "b": 1, "a": 2}'),
          output_schema=SCHEMA_ANY)),
    ("sdk_empty_inputs", "2026-01-02T03:04:05.123456+00:00",
     dict(task_kind="sdk.empty", inputs={}, output_schema=SCHEMA_ANY)),
]


def envelope_case(name: str, env: dict) -> dict:
    assert E.verify_id(env) and E.verify_inputs(env), name
    return {
        "name": name,
        "envelope_text": json.dumps(env),
        "handoff_id": env["handoff_id"],
        "input_hash": env["task"]["input_hash"],
        "canonical_hex": E.canonical(env).hex(),
        "spec_canonical_hex": E.canonical(E.spec_of(env)).hex(),
    }


def build_envelopes() -> list:
    out = []
    for name, at, kw in ENVELOPE_CASES:
        _NOW["value"] = at
        out.append(envelope_case(name, E.build(**kw)))

    # SDK path: the real dhp.dispatch against a throwaway store; capture
    # the envelope it builds and check the store accepted it.
    captured = []
    orig = dhp._build_envelope

    def capture(**kw):
        env = orig(**kw)
        captured.append(env)
        return env

    dhp._build_envelope = capture
    tmp = tempfile.mkdtemp(prefix="dhp-vectors-")
    try:
        store = dhp.Store(tmp)
        for name, at, kw in SDK_CASES:
            _NOW["value"] = at
            hid = dhp.dispatch(store, **kw)
            env = captured.pop()
            assert env["handoff_id"] == hid, name
            assert store.get_envelope(hid)["handoff_id"] == hid
            out.append(envelope_case(name, env))
        store.close()
    finally:
        dhp._build_envelope = orig
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def dump(path: str, obj) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    text = json.dumps(obj, indent=2, ensure_ascii=False) + "\n"
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(REPO, "spec", "vectors"))
    a = ap.parse_args()
    names = [n for n, _ in CANONICAL_CASES]
    assert len(names) == len(set(names)), "duplicate canonical case name"
    canon = [canonical_case(n, t) for n, t in CANONICAL_CASES]
    envs = build_envelopes()
    names = [c["name"] for c in envs]
    assert len(names) == len(set(names)), "duplicate envelope case name"
    dump(os.path.join(a.out, "canonical.json"), canon)
    dump(os.path.join(a.out, "envelopes.json"), envs)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import vectors_wire as W
    _NOW["value"] = "2026-01-02T03:04:05.123456+00:00"
    logs, bundles, tcp = W.build_logs(), W.build_bundles(), W.build_tcp()
    dump(os.path.join(a.out, "logs.json"), logs)
    dump(os.path.join(a.out, "bundles.json"), bundles)
    dump(os.path.join(a.out, "tcp.json"), tcp)
    print(f"wrote {len(canon)} canonical cases, {len(envs)} envelopes,"
          f" {len(logs)} logs, {len(bundles)} bundles and {len(tcp)} TCP"
          f" sessions to {a.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
