"""Reading reviews within bounded memory: big files and streams, cuts at the kept end."""

from __future__ import annotations

import io
import tracemalloc

import pytest

from classifier.serving.reviews import Reporter, read_reviews


@pytest.mark.parametrize("per_line", [False, True], ids=["file", "per-line"])
@pytest.mark.parametrize("keep", ["head", "tail"])
def test_reading_a_50_mb_file_takes_bounded_memory(big_file, per_line, keep):
    lines: list[str] = []
    tracemalloc.start()
    try:
        (review,) = list(
            read_reviews(
                [str(big_file)],
                Reporter(lines.append),
                per_line=per_line,
                max_bytes=65536,
                keep=keep,
            )
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * 1024 * 1024, peak
    assert len(review.text.encode()) <= 65536
    words = review.text.split()
    assert set(words) <= {"awful", "boring", "dull", "great", "wonderful", "superb"}  # none cut
    if keep == "tail":
        assert words[-1] == "superb"
        assert "classified from its last 65,536 bytes" in lines[0]
    else:
        assert words[0] == "awful" and "great" not in words
        assert "classified from its first 65,536 bytes" in lines[0]
    assert len(lines) == 1


def test_a_cut_inside_a_multibyte_character_is_not_a_decoding_warning(tmp_path):
    path = tmp_path / "accents.txt"
    path.write_text("é" * 100_000, encoding="utf-8")  # one long word, 2 bytes per character
    for keep in ("head", "tail"):
        lines: list[str] = []
        (review,) = read_reviews([str(path)], Reporter(lines.append), max_bytes=65535, keep=keep)
        assert set(review.text) == {"é"}
        assert [line for line in lines if "warning" in line] == []


def test_a_long_stdin_review_keeps_its_tail():
    stream = io.BytesIO(b"first " * 50_000 + b"last")
    lines: list[str] = []
    (review,) = read_reviews(["-"], Reporter(lines.append), max_bytes=65536, stdin=stream)
    assert review.source == "<stdin>" and review.text.split()[-1] == "last"
    assert "300,004 bytes; classified from its last 65,536 bytes" in lines[0]
