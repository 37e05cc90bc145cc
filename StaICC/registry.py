"""One registry of named things: backends, retrievers, methods, export formats, the CLI's commands.

A :class:`Registry` maps a name to an entry and, beside it, the entry's row of facts (a
backend's capabilities, a command's help text).  An entry is the object itself or a lazy
``"module:object"`` string, imported only when the name is used, so that listing the names
(``--help``, ``staicc run --model``) loads nothing heavy.  A name is registered once: a second
registration of it is refused (``replace=True`` says it is meant); :meth:`Registry.freeze` ends
registration altogether.  An unknown name is refused with the names there are::

    >>> from StaICC.registry import Registry
    >>> colours = Registry("colour")
    >>> colours.register("red", "colorsys:rgb_to_hls", info={"warm": True})
    'colorsys:rgb_to_hls'
    >>> colours.get("red").__name__, colours.info("red")
    ('rgb_to_hls', {'warm': True})
    >>> colours.register("red", len)
    Traceback (most recent call last):
    StaICC.registry.RegistryError: a colour named 'red' is already registered (colorsys:rgb_to_hls); choose another name, or pass replace=True
"""
import importlib
from dataclasses import dataclass
from typing import Any, Dict, Generic, Iterator, List, Mapping, Optional, TypeVar, Union

from .errors import StaICCError
from .validation import did_you_mean

T = TypeVar("T")


class RegistryError(StaICCError, ValueError):
    """A name registered twice, a registration after :meth:`Registry.freeze`, or an unknown name."""


class Registry(Generic[T]):
    """Names -> entries (objects, or lazy ``"module:object"`` strings) and each entry's row of facts."""

    def __init__(self, kind: str, *, ordered: bool = False) -> None:
        self.kind = kind  # what an entry is, in messages: "model backend", "sub-benchmark" ...
        self.ordered = ordered  # names listed in the order they were registered (else: sorted)
        self._entries: Dict[str, Union[T, str]] = {}
        self._info: Dict[str, Any] = {}
        self._frozen = False

    def register(self, name: str, entry: Union[T, str], *, info: Any = None, replace: bool = False) -> Union[T, str]:
        """Register ``entry`` as ``name`` (``info``: its row of facts); returns ``entry``, so this works as the
        last line of a decorator."""
        if not isinstance(name, str) or not name.strip():
            raise RegistryError(f"a {self.kind} name must be a non-empty string, got {name!r}")
        if self._frozen:
            raise RegistryError(f"the {self.kind} registry is frozen; {name!r} cannot be registered now")
        if name in self._entries and not replace:
            raise RegistryError(f"a {self.kind} named {name!r} is already registered ({_described(self._entries[name])}); "
                                "choose another name, or pass replace=True")
        if isinstance(entry, str) and ":" not in entry:
            raise RegistryError(f"a lazy {self.kind} entry is 'module:object', got {entry!r} for {name!r}")
        self._entries[name] = entry
        self._info[name] = info
        return entry

    def unregister(self, name: str) -> None:
        """Remove ``name`` (a test's throwaway entry); refused once frozen."""
        if self._frozen:
            raise RegistryError(f"the {self.kind} registry is frozen; {name!r} cannot be removed")
        self._entries.pop(name, None)
        self._info.pop(name, None)

    def freeze(self) -> "Registry[T]":
        """End registration: every later ``register`` or ``unregister`` is refused."""
        self._frozen = True
        return self

    def get(self, name: str) -> T:
        """The entry registered as ``name``, imported now when it is lazy."""
        entry = self._entries.get(name) if isinstance(name, str) else None
        if entry is None:
            raise RegistryError(self.unknown(name))
        if isinstance(entry, str):
            module, _, attribute = entry.partition(":")
            return getattr(importlib.import_module(module), attribute)
        return entry

    def unknown(self, name: Any) -> str:
        """The one-line refusal of an unknown name: the closest name, then every name."""
        return f"unknown {self.kind} {name!r}{did_you_mean(name, self.names())}; choose one of {', '.join(self.names())}"

    def entry(self, name: str) -> Union[T, str, None]:
        """The entry as registered (a lazy one stays a string); None for an unknown name."""
        return self._entries.get(name)

    def info(self, name: str, default: Any = None) -> Any:
        """The row of facts registered with ``name`` (``default`` when there is none or the name is unknown)."""
        found = self._info.get(name)
        return default if found is None else found

    def names(self) -> List[str]:
        """Every name: in registration order for an ``ordered`` registry (the order help texts list them),
        sorted otherwise."""
        return list(self._entries) if self.ordered else sorted(self._entries)

    def helps(self) -> Dict[str, str]:
        """Every name with its help text: its row's ``help`` (help texts and docs are written from this)."""
        return {name: str(getattr(self._info[name], "help", "") or "") for name in self.names()}

    def rows(self) -> Mapping[str, Any]:
        """Every name with its row of facts, in :meth:`names`' order (what help texts and docs are written from)."""
        return {name: self._info[name] for name in self.names()}

    def __getitem__(self, name: str) -> T:
        return self.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(self.names())})"


def _described(entry: Any) -> str:
    if isinstance(entry, str):
        return entry
    return getattr(entry, "__qualname__", None) or type(entry).__name__


def optional_info(registry: "Registry[Any]", name: Optional[str], default: Any) -> Any:
    """``registry.info(name)`` where ``name`` may be None or unknown (a run made by a function, a foreign file)."""
    return registry.info(name, default) if isinstance(name, str) else default


@dataclass(frozen=True)
class Described:
    """The row of an entry known by its help text alone (a retriever, a command): one line, for ``--help``
    and the generated docs."""

    help: str
