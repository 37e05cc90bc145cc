"""The one bounded line reader (results/jsonl.py): numbered UTF-8 lines, a line over the bound or not UTF-8
given as its error, and the caller's policy after a line too long (read past it, or stop)."""
import io

from StaICC.results.jsonl import LineTooLong, bounded_lines


def read(data, longest, skip_long):
    return [(n, text, type(error).__name__ if error else None)
            for n, text, error in bounded_lines(io.BytesIO(data), longest, skip_long=skip_long)]


def test_lines_are_numbered_and_a_line_of_exactly_the_bound_reads():
    data = b"abcde\n\n\xc3\xa9t\xc3\xa9\nxyzw"
    assert read(data, 5, skip_long=False) == [(1, "abcde\n", None), (2, "\n", None), (3, "\u00e9t\u00e9\n", None),
                                              (4, "xyzw", None)]


def test_a_line_over_the_bound_is_skipped_or_ends_the_reading():
    data = b"ok\n" + b"x" * 50 + b"\n" + b"\xff\n" + b"last\n"
    assert read(data, 8, skip_long=True) == [(1, "ok\n", None), (2, None, "LineTooLong"),
                                             (3, None, "UnicodeDecodeError"), (4, "last\n", None)]
    assert read(data, 8, skip_long=False) == [(1, "ok\n", None), (2, None, "LineTooLong")]
    assert read(b"x" * 9, 8, skip_long=True) == [(1, None, "LineTooLong")]  # a last line without its newline


def test_a_line_too_long_is_read_past_in_pieces(monkeypatch):
    import StaICC.results.jsonl as jsonl
    monkeypatch.setattr(jsonl, "_SKIP_CHUNK", 16)
    handle = io.BytesIO(b"y" * 1000 + b"\nnext\n")
    reads = []
    original = handle.readline
    handle.readline = lambda size: reads.append(size) or original(size)
    found = list(bounded_lines(handle, 32, skip_long=True))
    assert [(n, t) for n, t, _ in found] == [(1, None), (2, "next\n")] and isinstance(found[0][2], LineTooLong)
    assert max(reads) == 33
