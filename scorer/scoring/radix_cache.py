"""A radix prefix cache: prefilled states in a token-id trie, so the longest cached prefix at any depth is reused.

The idea of SGLang's RadixAttention, on this project's backend contract (:mod:`scorer.backends.base`). Each
node of a compressed trie holds an edge of token ids; a node may hold a backend :class:`~scorer.backends.base.Prefix`:
the state of every token from the root to the end of its edge. Asked for the state of ``ids``
(:meth:`RadixCache.prefix`), the cache walks the trie as far as ``ids`` match, at any depth, inside an edge too,
and builds the state from the best held one:

* ``hit``: a held state covers all of ``ids`` (exactly, or a longer one cut short: ``Backend.extend`` with
  ``keep``); no token goes through the model.
* ``partial``: a held state covers the first ``reused_tokens`` of ``ids``; only the rest is prefilled
  (``Backend.extend``). A row whose prompt shares 300 tokens with a cached node reuses those 300.
* ``miss``: nothing matches (or the backend cannot extend a state: a remote engine); ``ids`` are prefilled whole.

Every state that took model work is kept at its node (a split of an edge makes an inner node where two prefixes
part), so the next equal prefix is a hit. Inner nodes made by a split hold no state of their own: any state below
them starts with their tokens, and a backend that can cut a state (``Backend.cuts_prefixes``) cuts theirs from the
shallowest one below, for one use (a copy, no model work; kept, it would only duplicate part of its source). A
backend that cannot cut reuses only states that end on the walked path.

Memory: :attr:`RadixCache.budget_bytes` bounds the bytes of the states held, counted from each state's real size
(:attr:`~scorer.backends.base.Prefix.nbytes`: K/V tensors, saved llama.cpp states; the trie's own token lists are
not counted, a few bytes per token against tens of kilobytes). Past the budget, the least recently used leaves
(nodes with a state and no children) are evicted and their states released; an inner node left without a state
and with one child is merged into it, one left with none is removed. A state in use (between entering and
leaving :meth:`RadixCache.prefix`) is never evicted; one larger than the whole budget is used once, then evicted.

One cache serves one backend (its states are that backend's) and is not thread-safe: its owner serialises calls
(:class:`scorer.api.Scorer` holds one for its lifetime under its lock, so calls of the Python API and requests to
``semif serve`` reuse each other's prefixes).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

from scorer.backends.base import Backend, Prefix
from scorer.core.checks import positive_int
from scorer.core.errors import ValidationError

DEFAULT_BUDGET_BYTES = 1 << 30
"""Default memory budget of the states a cache holds: 1 GiB (torch fp32 K/V of qwen2.5-0.5b is 24 KiB per token,
so about 43,000 cached tokens; smollm2-135m 45 KiB, about 23,000; llama.cpp's f16 cache holds half as much)."""


@dataclass(frozen=True)
class Lookup:
    """How one prefix's state was obtained (what a record's ``cache`` block says)."""

    lookup: str
    """``hit``, ``partial`` or ``miss`` (a record adds ``group``: shared mode's rows after their group's first)."""
    reused_tokens: int
    """Leading tokens of the prefix taken from a held state."""
    prefilled_tokens: int
    """Tokens of the prefix that went through the model (``reused_tokens + prefilled_tokens`` is its length)."""
    prefill_s: float
    """Seconds spent building the state (0 for an exact hit)."""
    state_bytes: int
    """Bytes of the state (:attr:`~scorer.backends.base.Prefix.nbytes`)."""
    held_bytes: int
    """Bytes of the states the cache held with this one kept (before evicting for it; a cut handed out for one
    use is not kept)."""
    budget_bytes: int
    """The cache's budget."""

    def after(self, earlier: Lookup) -> Lookup:
        """This lookup with the model work of ``earlier``, a lookup of a shorter prefix of the same ids made just
        before it so that this one could extend it (``--slots sequence`` holds a row's group state first): its
        prefilled tokens count as this prefix's, since they went through the model for it, and are no longer
        counted as reused (left out, a run's first row of each state would say its state was free). The counts
        still add up to the prefix; the kind follows them."""
        if not earlier.prefilled_tokens:
            return self
        total = self.reused_tokens + self.prefilled_tokens
        filled = min(total, self.prefilled_tokens + earlier.prefilled_tokens)
        kind = "miss" if filled == total else "partial"
        return Lookup(kind, total - filled, filled, self.prefill_s + earlier.prefill_s, self.state_bytes,
                      self.held_bytes, self.budget_bytes)

    def block(self) -> dict[str, Any]:
        """The record's ``cache`` block (schema ``scorer/formats/schemas/record-v2.json``)."""
        return {"kind": "radix", "lookup": self.lookup, "reused_tokens": self.reused_tokens,
                "prefilled_tokens": self.prefilled_tokens, "state_bytes": self.state_bytes,
                "held_bytes": self.held_bytes, "budget_bytes": self.budget_bytes}


@dataclass
class CacheStats:
    """What a cache did over its life (a run's, or a :class:`~scorer.api.Scorer`'s)."""

    hits: int = 0
    partial: int = 0
    misses: int = 0
    reused_tokens: int = 0
    """Prefix tokens taken from held states, summed over the lookups."""
    prefilled_tokens: int = 0
    """Prefix tokens that went through the model, summed over the lookups."""
    evictions: int = 0
    """States released to stay within the budget."""
    evicted_bytes: int = 0
    peak_bytes: int = 0
    """Most bytes held at once (may pass the budget while a state larger than what is free is in use)."""

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


class _Node:
    """A trie node: the edge from its parent, and maybe the state of every token from the root to the edge's end."""

    __slots__ = ("children", "depth", "edge", "parent", "pins", "state", "used")

    def __init__(self, edge: list[int], depth: int, parent: _Node | None) -> None:
        self.edge = edge
        self.depth = depth
        """Tokens from the root to the end of :attr:`edge`."""
        self.parent = parent
        self.children: dict[int, _Node] = {}
        """By the first token of the child's edge."""
        self.state: Prefix | None = None
        self.used = 0
        """Logical time of the last use of its state (LRU)."""
        self.pins = 0
        """Uses in progress; a pinned node is never evicted."""


@dataclass(frozen=True)
class _Walk:
    """Where ``ids`` leave the trie."""

    path: list[_Node]
    """The root, then every node whose whole edge matched."""
    depth: int
    """Tokens of ``ids`` matched (into a partly matched edge too)."""
    inside: _Node | None
    """The child whose edge matched only in part (its first ``depth - path[-1].depth`` tokens)."""


class RadixCache:
    """Prefilled prefix states in a token-id trie, within a memory budget (see the module docstring)."""

    def __init__(self, budget_bytes: int = DEFAULT_BUDGET_BYTES) -> None:
        self.budget_bytes = positive_int(budget_bytes, "prefix_cache_bytes")
        self.stats = CacheStats()
        self._root = _Node([], 0, None)
        self._held: set[_Node] = set()
        """Nodes holding a state."""
        self._bytes = 0
        self._backend: Backend | None = None
        self._clock = itertools.count(1)

    # --- what callers use -----------------------------------------------------------------------------
    @property
    def held_bytes(self) -> int:
        """Bytes of the states held now."""
        return self._bytes

    @property
    def states(self) -> int:
        """States held now."""
        return len(self._held)

    @property
    def longest_held(self) -> int:
        """Tokens of the longest state held now (0 when none): what a lookup may restore, for a backend that sizes
        a fixed state before a run (:meth:`~scorer.backends.base.Backend.plan_memory`)."""
        return max((n.depth for n in self._held), default=0)

    @contextmanager
    def prefix(self, backend: Backend, ids: list[int]) -> Iterator[tuple[Prefix, Lookup]]:
        """The state of ``ids`` on ``backend`` and how it was obtained, held (never evicted) inside the block.

        The state belongs to the cache: use it (``score_with_prefix``, ``fan_out``, ``extend``), never release it.
        Leaving the block lets the cache evict down to its budget."""
        state, look, node = self._acquire(backend, list(ids))
        try:
            yield state, look
        finally:
            if node is None:  # a cut of a held state, made for this use only
                backend.release(state)
            else:
                node.pins -= 1
                self._evict()

    def clear(self) -> None:
        """Release every state and forget the backend (the cache may then serve another); the stats are kept.
        Called when a run or a scorer ends, so it never raises: a state still in use is released too."""
        for node in list(self._held):
            self._drop_state(node)
        self._root = _Node([], 0, None)
        self._backend = None

    def summary(self) -> str:
        """One line for people: lookups, tokens reused, evictions, memory."""
        s = self.stats
        reused = s.reused_tokens + s.prefilled_tokens
        share = f" ({100 * s.reused_tokens / reused:.0f}%)" if reused else ""
        return (f"prefix cache (radix, budget {_size(self.budget_bytes)}): {s.hits} hits, {s.partial} partial, "
                f"{s.misses} misses; reused {s.reused_tokens:,} of {reused:,} prefix tokens{share}, prefilled "
                f"{s.prefilled_tokens:,}; {s.evictions} evictions ({_size(s.evicted_bytes)}); peak "
                f"{_size(s.peak_bytes)}, {len(self._held)} states held ({_size(self._bytes)})")

    # --- the trie ----------------------------------------------------------------------------------------
    def _bind(self, backend: Backend) -> None:
        if self._backend is None:
            self._backend = backend
        elif self._backend is not backend:
            raise ValidationError("this prefix cache holds the states of another backend (one cache per backend; "
                                  "clear it first)")

    def _walk(self, ids: list[int]) -> _Walk:
        node, depth, path = self._root, 0, [self._root]
        while depth < len(ids):
            child = node.children.get(ids[depth])
            if child is None:
                break
            k = 1  # the first token matched by the key
            while k < len(child.edge) and depth + k < len(ids) and child.edge[k] == ids[depth + k]:
                k += 1
            if k < len(child.edge):
                return _Walk(path, depth + k, child)
            depth += k
            node = child
            path.append(child)
        return _Walk(path, depth, None)

    def _source(self, walk: _Walk, backend: Backend) -> tuple[_Node | None, int]:
        """The held state to build from and how many of its tokens to keep (``(None, 0)``: prefill whole)."""
        if not backend.extends_prefixes:
            return None, 0
        if backend.cuts_prefixes and walk.depth > 0:
            # Any state below the point where the walk stopped starts with the matched tokens: the shallowest is
            # the cheapest to restore and cut (every leaf holds a state, so the subtree has one).
            top = walk.inside if walk.inside is not None else walk.path[-1]
            return _shallowest_state(top), walk.depth
        deepest = next((n for n in reversed(walk.path) if n.state is not None), None)
        return (deepest, deepest.depth) if deepest is not None else (None, 0)

    def _acquire(self, backend: Backend, ids: list[int]) -> tuple[Prefix, Lookup, _Node | None]:
        """Find or build the state of ``ids``: the state, how it was had, and its pinned node (None for a cut
        that is not kept); evicts down to the budget."""
        self._bind(backend)
        if not ids:
            raise ValidationError("the prefix has no tokens (expected at least one token id)")
        walk = self._walk(ids)
        end = walk.path[-1]
        now = next(self._clock)
        node: _Node | None
        held = end.state if walk.inside is None and walk.depth == len(ids) else None
        if held is not None:
            node, state = end, held
            look = Lookup("hit", len(ids), 0, 0.0, state.nbytes, self._bytes, self.budget_bytes)
        else:
            source, keep = self._source(walk, backend)
            if source is None:
                state = backend.prefill(ids)
            else:
                assert source.state is not None
                source.used = now
                state = backend.extend(source.state, ids[keep:], keep=keep)
            # A cut of a held state cost no model work and duplicates part of its source: it is handed out once,
            # not kept (the next use cuts again). A state that took model work is kept.
            node = None if keep == len(ids) else self._insert(ids, state)
            kind = "miss" if keep == 0 else ("hit" if keep == len(ids) else "partial")
            look = Lookup(kind, keep, len(ids) - keep, state.prefill_s, state.nbytes, self._bytes, self.budget_bytes)
        if node is not None:
            node.used = next(self._clock)  # after its source's use: the state just built is the most recent
            node.pins += 1
        self._count(look)
        self._evict()
        return state, look, node

    def _insert(self, ids: list[int], state: Prefix) -> _Node:
        """Keep ``state`` at the node ending at ``ids`` (splitting an edge or adding a leaf as needed)."""
        walk = self._walk(ids)
        parent = walk.path[-1]
        if walk.inside is not None:
            parent = _split(walk.inside, walk.depth - parent.depth)
        if walk.depth == len(ids):
            node = parent
            assert node.state is None, "a held state was rebuilt"
        else:
            node = _Node(ids[walk.depth:], len(ids), parent)
            parent.children[ids[walk.depth]] = node
        node.state = state
        self._held.add(node)
        self._bytes += state.nbytes
        self.stats.peak_bytes = max(self.stats.peak_bytes, self._bytes)
        return node

    def _count(self, look: Lookup) -> None:
        s = self.stats
        if look.lookup == "hit":
            s.hits += 1
        elif look.lookup == "partial":
            s.partial += 1
        else:
            s.misses += 1
        s.reused_tokens += look.reused_tokens
        s.prefilled_tokens += look.prefilled_tokens

    def _evict(self) -> None:
        """Release least recently used leaves until the held states fit the budget (pinned ones stay)."""
        while self._bytes > self.budget_bytes:
            victim = min((n for n in self._held if not n.children and not n.pins), key=lambda n: n.used,
                         default=None)
            if victim is None:
                return
            self.stats.evictions += 1
            self.stats.evicted_bytes += self._drop_state(victim)
            self._prune(victim)

    def _drop_state(self, node: _Node) -> int:
        """Release a node's state; its bytes."""
        assert node.state is not None and self._backend is not None
        n = node.state.nbytes
        self._bytes -= n
        self._backend.release(node.state)
        node.state = None
        self._held.discard(node)
        return n

    def _prune(self, node: _Node) -> None:
        """Remove a node left with no state and no children, then its stateless ancestors likewise; merge one left
        with a single child into it (the trie stays compressed)."""
        while node.parent is not None and node.state is None:
            parent = node.parent
            if not node.children:
                del parent.children[node.edge[0]]
                node = parent
                continue
            if len(node.children) == 1:
                (child,) = node.children.values()
                child.edge = node.edge + child.edge
                child.parent = parent
                parent.children[node.edge[0]] = child
            return


def _split(child: _Node, k: int) -> _Node:
    """Cut ``child``'s edge after ``k`` tokens: a new stateless inner node holds the first ``k``."""
    parent = child.parent
    assert parent is not None and 0 < k < len(child.edge)
    mid = _Node(child.edge[:k], parent.depth + k, parent)
    mid.used = child.used
    parent.children[child.edge[0]] = mid
    child.edge = child.edge[k:]
    child.parent = mid
    mid.children[child.edge[0]] = child
    return mid


def _shallowest_state(top: _Node) -> _Node:
    """The node holding a state with the fewest tokens in ``top``'s subtree (``top`` included)."""
    tie = itertools.count()
    heap = [(top.depth, next(tie), top)]
    while heap:
        _, _, node = heapq.heappop(heap)
        if node.state is not None:
            return node
        for child in node.children.values():
            heapq.heappush(heap, (child.depth, next(tie), child))
    raise AssertionError("a trie subtree without a state (every leaf holds one)")


def _size(n: int) -> str:
    """Bytes for people: ``512 B``, ``1.5 MiB``."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")
