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
