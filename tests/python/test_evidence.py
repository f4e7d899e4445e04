"""tessera.evidence: packets verified from Python as the CLI verifies them."""
import json

from tessera import evidence

ROOT = __file__.rsplit("/tests/", 1)[0]
PACKET = ROOT + "/bench/evidence/cpu/reduce.packet.json"


def test_a_recorded_packet_verifies_as_the_cli_says():
    v = evidence.verify(PACKET, source_root=ROOT)
    assert v.verdict in ("fresh", "stale")
    assert v.exit_code in (0, 10)
    assert v.packet["sealed"] is True and v.packet["cases"]
    assert evidence.source_fingerprint(ROOT) == evidence.source_fingerprint(ROOT)


def test_an_edited_packet_is_tampered(tmp_path):
    edited = tmp_path / "edited.packet.json"
    packet = json.loads(open(PACKET, encoding="utf-8").read())
    packet["cases"][0]["achieved_gbs"] *= 2  # a better number than was measured
    edited.write_text(json.dumps(packet))
    v = evidence.verify(edited, source_root=ROOT)
    assert (v.verdict, v.exit_code) == ("tampered", 20)


def test_the_readme_table_comes_from_the_packets(tmp_path):
    table = evidence.headline_table(ROOT + "/bench/evidence", source_root=ROOT)
    readme = open(ROOT + "/README.md", encoding="utf-8").read()
    assert table.strip() and table.strip() in readme


def test_a_missing_packet_is_an_error(tmp_path):
    v = evidence.verify(tmp_path / "none.packet.json", source_root=ROOT)
    assert v.exit_code == 21 and v.packet is None


def overhead_body(python_ns=2000.0, native_ns=500.0, target_ns=2000.0):
    def dom(ns):
        return {"median_ns": ns, "min_ns": ns * 0.9, "max_ns": ns * 1.2, "p90_ns": ns * 1.1,
                "cohort_medians_ns": [ns, ns * 1.01, ns * 0.99], "spread_pct": (1.01 / 0.99 - 1) * 100,
                "stable": True}
    case = {"name": "call", "primary_domain": "python_call",
            "domains": {"python_call": dom(python_ns), "native_call": dom(native_ns)},
            "overhead_ns": python_ns - native_ns, "target_overhead_ns": target_ns,
            "meets_target": python_ns - native_ns <= target_ns,
            "anchors": [{"anchor": "numpy", "median_ns": 1000.0, "ratio_anchor_over_tessera": 1000.0 / python_ns}],
            "oracle": [{"pass": True}], "sampling_used": {"stability_pct": 10.0}}
    return {"kind": "call_overhead", "all_checks_pass": True, "cases": [case]}


def seal(body, path):
    from tessera import _core
    path.write_text(_core.seal_packet(json.dumps(body), "cpu", unsealed=True, source_root=ROOT))
    return path


def test_a_call_overhead_packet_verifies_and_its_overhead_is_rederived(tmp_path):
    v = evidence.verify(seal(overhead_body(), tmp_path / "ok.packet.json"), source_root=ROOT)
    assert v.verdict in ("fresh", "unsealed")  # sealed from a clean tree (a CI clone), else unsealed
    assert v.packet["kind"] == "call_overhead" and v.packet["cases"][0]["meets_target"] is True


def test_a_call_overhead_packet_with_a_smaller_overhead_is_tampered(tmp_path):
    import subprocess
    import sys
    path = seal(overhead_body(), tmp_path / "edited.packet.json")
    for edit in ("cases.0.overhead_ns=100.0", "cases.0.meets_target=false"):
        subprocess.run([sys.executable, ROOT + "/tests/ir/Inputs/remanifest.py", "packet", str(path), "--set",
                        edit], check=True)
        v = evidence.verify(path, source_root=ROOT)
        assert (v.verdict, v.exit_code) == ("tampered", 20), v.detail
        assert "E860" in v.detail
        path = seal(overhead_body(), tmp_path / "edited.packet.json")


def test_a_contradictory_packet_is_never_sealed(tmp_path):
    import pytest
    import tessera as ts
    body = overhead_body()
    body["cases"][0]["meets_target"] = False  # 1500 ns is within 2000 ns
    with pytest.raises(ts.Error) as e:
        seal(body, tmp_path / "never.packet.json")
    assert e.value.code == "E860"
    assert not (tmp_path / "never.packet.json").exists() or not (tmp_path / "never.packet.json").read_text()


def test_a_packet_cannot_choose_what_its_fingerprint_covers(tmp_path):
    import shutil
    import subprocess
    import sys
    path = tmp_path / "scoped.packet.json"
    shutil.copy(PACKET, path)
    subprocess.run([sys.executable, ROOT + "/tests/ir/Inputs/remanifest.py", "packet", str(path), "--set",
                    'source.fingerprint_covers=["docs"]'], check=True)
    v = evidence.verify(path, source_root=ROOT)
    assert (v.verdict, v.exit_code) == ("tampered", 20) and "E861" in v.detail
