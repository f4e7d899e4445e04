"""Recomputes the unkeyed digest of an evidence packet or an AOT package's
manifest after an edit, as anyone can: what the lit tests use to forge a
packet or package whose digest matches, to show that verify re-derives what
it can instead of trusting the digest.

  remanifest.py packet FILE [--set PATH=JSON]...  # rewrites manifest.body_sha256 (keeps a signature)
  remanifest.py package DIR                       # rewrites DIR/manifest.json's manifest_sha256

--set edits a field first: PATH is dotted keys and list indices
(cases.0.achieved_gbs), JSON the new value (true, 1.5, "text").
"""
import hashlib
import json
import sys


class Number(str):
    """A float kept as the text nlohmann::json wrote (its Grisu2 digits are not always Python's shortest)."""


def dump(value):
    # nlohmann::json's dump(): keys sorted, no spaces, UTF-8, floats as written.
    if isinstance(value, dict):
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + dump(value[k]) for k in sorted(value)) + "}"
    if isinstance(value, list):
        return "[" + ",".join(dump(v) for v in value) + "]"
    if isinstance(value, Number):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def canonical(value):
    return dump(value).encode()


def load(path):
    with open(path) as f:
        return json.load(f, parse_float=Number)


def set_field(packet, assignment):
    path, value = assignment.split("=", 1)
    keys = path.split(".")
    node = packet
    for k in keys[:-1]:
        node = node[int(k)] if isinstance(node, list) else node[k]
    last = keys[-1]
    parsed = json.loads(value, parse_float=Number)
    if isinstance(node, list):
        node[int(last)] = parsed
    else:
        node[last] = parsed


def main():
    kind, path = sys.argv[1], sys.argv[2]
    edits = [sys.argv[i + 1] for i in range(3, len(sys.argv) - 1) if sys.argv[i] == "--set"]
    if kind == "packet":
        packet = load(path)
        for e in edits:
            set_field(packet, e)
        manifest = packet.pop("manifest", {})
        manifest["body_sha256"] = hashlib.sha256(canonical(packet)).hexdigest()
        manifest.setdefault("algorithm", "sha256 of the JSON body, keys sorted")
        packet["manifest"] = manifest
        out = path
    else:
        out = path + "/manifest.json"
        packet = load(out)
        packet.pop("manifest_sha256", None)
        signature = packet.pop("signature", None)
        packet["manifest_sha256"] = hashlib.sha256(canonical(packet)).hexdigest()
        if signature is not None:
            packet["signature"] = signature
    with open(out, "w") as f:
        f.write(dump(packet) + "\n")


if __name__ == "__main__":
    main()
