#!/usr/bin/env python3
"""Seeds and dictionaries of the fuzz targets (tests/fuzz/): OUT/contract, OUT/results_csv,
OUT/model (seed folders) and OUT/<target>.dict (libFuzzer dictionaries).

  scripts/fuzz_seeds.py OUT

contract: every contract of contracts/ cut into small files a fuzzer can run many times a
second (one kernel case per file, the primer's entries sixteen at a time, the M8 contract
whole), and variants of them that reach the size checks: kernel shapes with large and
power-of-two extents (2^20 .. 2^62: products that wrap 64 bits), a ragged M8 array, deep
and long arrays. results_csv: every results file under results/examples, and variants
(a duplicate row, a failed row, another machine's row, a quoted field with a newline).
model: every preset of models/ and test model of tests/fixtures/models, and variants with
extents at the loader's cap (2^40: products that wrap 64 bits) and past the layer limit.
"""
import csv
import io
import json
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def dump(path, obj):
    path.write_text(json.dumps(obj, separators=(",", ":")))


def contract_seeds(out):
    out.mkdir(parents=True, exist_ok=True)
    kernels = json.loads((ROOT / "contracts/kernels.json").read_text())
    for i, case in enumerate(kernels["cases"]):
        dump(out / f"kernels_{i:03d}.json", {"schema": kernels["schema"], "cases": [case]})
    # one case per kernel with its shape at large and power-of-two extents
    first = {}
    for case in kernels["cases"]:
        if "status" not in case["expected"]:
            first.setdefault(case["kernel"], case)
    for kernel, case in sorted(first.items()):
        for bits in (20, 31, 32, 62):
            for field in case["shape"]:
                big = json.loads(json.dumps(case))
                big["id"] = f"{kernel}_{field}_2^{bits}"
                big["shape"][field] = 1 << bits
                dump(out / f"big_{kernel}_{field}_{bits}.json",
                     {"schema": kernels["schema"], "cases": [big]})
        every = json.loads(json.dumps(case))
        every["shape"] = {k: 1 << 21 for k in case["shape"]}
        dump(out / f"big_{kernel}_all_21.json", {"schema": kernels["schema"], "cases": [every]})
    primer = json.loads((ROOT / "contracts/primer.json").read_text())
    entries = primer["entries"]
    for i in range(0, len(entries), 16):
        part = dict(primer, entries=entries[i:i + 16])
        dump(out / f"primer_{i // 16:02d}.json", part)
    m8 = json.loads((ROOT / "contracts/m8.json").read_text())
    dump(out / "m8.json", m8)

    def m8_variant(name, edit):
        variant = json.loads(json.dumps(m8))
        edit(variant)
        dump(out / f"m8_{name}.json", variant)

    def ragged(v):
        v["zoh"]["exact_input_matrices"] = [[[0.1], [0.2]], [[0.3]], [[0.4], [0.5], [0.6]]]

    m8_variant("ragged", ragged)
    # raw texts: deep nesting, a long array, a duplicate key, a huge number
    (out / "deep.json").write_text("[" * 4096 + "]" * 4096)
    (out / "long_array.json").write_text(
        '{"schema_version":2,"zoh":{"continuous_a":[' + ",".join(["1"] * 20000) + "]}}")
    (out / "duplicate_key.json").write_text('{"schema":"longmix-kernels/1","schema":"x"}')
    (out / "huge_number.json").write_text('{"schema_version":2,"memory":1e999999}')


def results_seeds(out):
    out.mkdir(parents=True, exist_ok=True)
    files = sorted((ROOT / "results/examples").rglob("*.csv"))
    sweep = None
    for path in files:
        name = "_".join(path.relative_to(ROOT / "results/examples").parts)
        data = path.read_bytes()
        (out / name).write_bytes(data)
        if path.name == "sweep.csv":
            sweep = data.decode()
    if sweep is None:
        return
    rows = list(csv.reader(io.StringIO(sweep)))
    header, body = rows[0], rows[1:4]

    def write(name, table):
        text = io.StringIO()
        csv.writer(text, lineterminator="\n").writerows(table)
        (out / f"variant_{name}.csv").write_text(text.getvalue())

    write("short", [header] + body)
    write("duplicate", [header] + body + body[:1])
    status = header.index("status")
    failed = [list(r) for r in body]
    failed[0][status] = "error"
    write("failed", [header] + failed + body[:1])
    other = [list(r) for r in body]
    other[1][header.index("cpu_model")] = "another cpu"
    write("other_machine", [header] + other)
    quoted = [list(r) for r in body]
    quoted[0][header.index("note")] = 'a "quoted"\nnote, with a comma'
    write("quoted", [header] + quoted)
    write("header_only", [header])


def model_seeds(out):
    out.mkdir(parents=True, exist_ok=True)
    files = sorted((ROOT / "models").glob("*.json")) + \
        sorted((ROOT / "tests/fixtures/models").glob("*.json"))
    for path in files:
        (out / path.name).write_text(path.read_text())
    base = json.loads((ROOT / "models/llama3-8b.json").read_text())

    def variant(name, edit):
        model = json.loads(json.dumps(base))
        edit(model)
        dump(out / f"variant_{name}.json", model)

    variant("d_model_cap", lambda m: m.update(d_model=2 ** 40))
    variant("vocab_cap", lambda m: m.update(vocab=2 ** 40, d_model=2 ** 40))
    variant("layers_many", lambda m: m.update(layers=2 ** 20))
    variant("ff_cap", lambda m: m["mlp"].update(d_ff=2 ** 40))
    variant("context_cap", lambda m: m.update(max_context=2 ** 40))
    variant("heads_cap", lambda m: m["attention"].update(heads=2 ** 40, head_dim=2 ** 40))


def json_words(obj, words):
    """Every key and every name-like string value of a JSON tree, into the set `words`."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            words.add(key)
            json_words(value, words)
    elif isinstance(obj, list):
        for value in obj:
            json_words(value, words)
    elif isinstance(obj, str) and re.fullmatch(r"[A-Za-z0-9_/+-]{1,24}", obj):
        words.add(obj)  # kernel, dtype, status and option names; not ids or prose


def quoted(token):
    return '"' + "".join(c if c.isprintable() and c not in '"\\' else "\\x%02x" % ord(c)
                         for c in token) + '"'


def write_dict(path, tokens):
    path.write_text("".join(f"{quoted(t)}\n" for t in sorted(set(tokens))))


def dictionaries(out):
    """contract.dict: every key and short string of the contracts (each schema's keys, kernel
    names, options, status names) as JSON strings, and JSON's own tokens; results_csv.dict:
    the results columns, status words and CSV's quoting."""
    words = set()
    for path in sorted((ROOT / "contracts").glob("*.json")):
        json_words(json.loads(path.read_text()), words)
    words = [w for w in words if w.isprintable() and " " not in w]  # names, not prose
    tokens = ['"' + w + '"' for w in words] + ['"' + w + '":' for w in words]
    tokens += ["{", "}", "[", "]", ":", ",", "true", "false", "null", "-0", "1e308", "2e-308",
               "NaN", "Infinity", "4294967296", "18446744073709551616", "9223372036854775807",
               "\\u0000", "\\n", '"\\u001b"', "[[[", "]]]"]
    write_dict(out / "contract.dict", tokens)
    header = (ROOT / "results/examples/make-run/sweep.csv").read_text().splitlines()[0]
    csv_tokens = header.split(",") + ["ok", "wrong", "error", "failed", "nan", "inf", "-inf",
                                      '"', '""', "\r\n", "\n", ",", ";", "1e999", "-1"]
    write_dict(out / "results_csv.dict", csv_tokens)
    words = set()
    for path in sorted((ROOT / "models").glob("*.json")):
        json_words(json.loads(path.read_text()), words)
    words = [w for w in words if w.isprintable() and " " not in w]
    tokens = ['"' + w + '"' for w in words] + ['"' + w + '":' for w in words]
    tokens += ["{", "}", "[", "]", ":", ",", "true", "false", "null", "0", "-1", "1099511627776",
               "1099511627777", "9223372036854775807", '"longmix-model/1"']
    write_dict(out / "model.dict", tokens)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip())
    out = Path(sys.argv[1])
    contract_seeds(out / "contract")
    results_seeds(out / "results_csv")
    model_seeds(out / "model")
    dictionaries(out)
    for target in ("contract", "results_csv", "model"):
        print(f"fuzz seeds: {len(os.listdir(out / target))} for {target} in {out / target}")


if __name__ == "__main__":
    main()
