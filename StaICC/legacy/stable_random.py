"""Original path of the stable random generator (see :mod:`StaICC.rng`)."""
from ..rng import StableRandom, fresh_stream  # noqa: F401


class stable_random(StableRandom):
    """:class:`StableRandom` under the original's class and method names (same draws)."""

    __slots__ = ()

    def get_float(self) -> float:
        """Advance once; a float in [0, 1)."""
        return self.next_float()

    def get_int_from_range(self, start: int, end: int) -> int:
        """int(start + (end - start) * u), consuming one float."""
        return self.int_in_range(start, end)

    def sample_one_element_from_list(self, list):  # noqa: A002 - the original's parameter name
        return self.one_element(list)

    def sample_n_elements_from_list(self, list, n: int, allow_repetition: bool = False):  # noqa: A002
        return self.n_elements(list, n, allow_repetition)

    def sample_index_set(self, sample_number: int, max_index: int, allow_repetition: bool = False):
        return self.index_set(sample_number, max_index, allow_repetition)

    def shuffle_list(self, list):  # noqa: A002
        """A shuffled copy; the argument is left as it was."""
        return self.shuffle(list)
