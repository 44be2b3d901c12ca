"""Idempotent producers: the state a trajectory keeps per producer id, and its rules.

The state lives in mrecd's extension attribute ``mrecd_producers`` of
``trajectory/zarr.json``, written in the same marker replace as ``nstep``, so
frames and the producer state that admitted them commit atomically::

    "mrecd_producers": [
        {"id": "job-7", "epoch": 3, "seq": 41, "answers": [[38, 1200, 64], ...]},
        ...
    ]

Entries run from the least to the most recently committed producer; each
keeps the answers ``[seq, first, count]`` of its last :data:`MAX_ANSWERS`
committed sequences (the answer's ``nstep`` is ``first + count``). Beyond
:data:`MAX_PRODUCERS` producers the least recently committed is forgotten: a
retry from it is then refused as a gap (``expected`` 0), never landed twice.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from ...errors import InvalidRecord, ProducerFenced, SequenceGap

__all__ = [
    "ATTRIBUTE",
    "MAX_ANSWERS",
    "MAX_PRODUCERS",
    "Appended",
    "Producer",
    "ProducerTable",
]

#: the extension attribute of ``trajectory/zarr.json`` holding the producer state
ATTRIBUTE = "mrecd_producers"
#: answers kept per producer (the contract asks for at least 32)
MAX_ANSWERS = 32
#: producers kept per trajectory; the least recently committed beyond it is forgotten
MAX_PRODUCERS = 1024
#: epochs and sequence numbers are below 2**53 (exact in every JSON reader)
LIMIT = 2**53
_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")


def _counter(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < LIMIT


@dataclass(frozen=True)
class Producer:
    """One batch's claim: producer ``id``, its ``epoch`` and the batch's sequence number ``seq``.

    Parameters
    ----------
    id
        1-128 characters of ``[A-Za-z0-9._:-]``.
    epoch, seq
        Integers in ``[0, 2**53)``.

    Raises
    ------
    InvalidRecord
        A field breaks its rule (``path`` names it).
    """

    id: str
    epoch: int
    seq: int

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or _ID.fullmatch(self.id) is None:
            raise InvalidRecord(
                f"a producer id is 1-128 characters of [A-Za-z0-9._:-], not {self.id!r}",
                path="id",
            )
        for name in ("epoch", "seq"):
            if not _counter(getattr(self, name)):
                raise InvalidRecord(
                    f"{name} must be an integer in [0, 2**53), not {getattr(self, name)!r}",
                    path=name,
                )


@dataclass(frozen=True)
class Appended:
    """The answer to an append: ``nstep`` after its frames, ``first``, ``count``, ``duplicate``.

    A duplicate whose first answer is no longer kept has ``first`` and
    ``count`` ``None`` and the current ``nstep``.
    """

    nstep: int
    first: int | None
    count: int | None
    duplicate: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The JSON body of the answer."""
        return {
            "nstep": self.nstep,
            "first": self.first,
            "count": self.count,
            "duplicate": self.duplicate,
        }


@dataclass
class _State:
    epoch: int
    seq: int
    #: seq -> (first, count), oldest first
    answers: OrderedDict[int, tuple[int, int]] = field(default_factory=OrderedDict)


class ProducerTable:
    """The producer state of one trajectory: check a claim, record a committed batch."""

    def __init__(self) -> None:
        self._states: OrderedDict[str, _State] = OrderedDict()

    def __len__(self) -> int:
        return len(self._states)

    def __contains__(self, producer_id: object) -> bool:
        return producer_id in self._states

    @classmethod
    def from_attribute(cls, value: Any, *, path: str = "trajectory") -> ProducerTable:
        """The table of an ``mrecd_producers`` attribute (``None``: empty).

        Raises
        ------
        InvalidRecord
            The attribute is malformed.
        """
        table = cls()
        if value is None:
            return table
        where = f"{path}/zarr.json#{ATTRIBUTE}"
        if not isinstance(value, list):
            raise InvalidRecord(f"{ATTRIBUTE} must be a list of producer entries", path=where)
        for n, entry in enumerate(value):
            producer_id, state = _parse_entry(entry, f"{where}/{n}")
            if producer_id in table._states:
                raise InvalidRecord(f"producer {producer_id!r} appears twice", path=where)
            table._states[producer_id] = state
        return table

    def to_attribute(self) -> list[dict[str, Any]] | None:
        """The ``mrecd_producers`` attribute (``None`` when no producer ever committed)."""
        if not self._states:
            return None
        return [
            {
                "id": producer_id,
                "epoch": state.epoch,
                "seq": state.seq,
                "answers": [[seq, first, count] for seq, (first, count) in state.answers.items()],
            }
            for producer_id, state in self._states.items()
        ]

    def answers_beyond(self, nstep: int) -> list[str]:
        """Producers holding an answer whose frames end past ``nstep`` (a corrupt state)."""
        return [
            producer_id
            for producer_id, state in self._states.items()
            if any(first + count > nstep for first, count in state.answers.values())
        ]

    def check(self, producer: Producer, nstep: int) -> Appended | None:
        """``None`` when ``producer``'s batch is next; its first answer when a duplicate.

        ``nstep`` is the current frame count (the answer of a duplicate whose
        first answer is no longer kept).

        Raises
        ------
        ProducerFenced
            ``producer.epoch`` is older than the stored one.
        SequenceGap
            The batch is not the next one (``expected`` says which is).
        """
        state = self._states.get(producer.id)
        if state is None or producer.epoch > state.epoch:
            if producer.seq == 0:
                return None
            why = "is unknown" if state is None else f"starts epoch {producer.epoch}"
            raise SequenceGap(
                f"producer {producer.id!r} {why}: its first sequence is 0, not {producer.seq}",
                path="Producer-Seq",
                expected=0,
            )
        if producer.epoch < state.epoch:
            raise ProducerFenced(
                f"producer {producer.id!r} epoch {producer.epoch} is fenced by epoch {state.epoch}",
                path="Producer-Epoch",
                epoch=state.epoch,
            )
        if producer.seq == state.seq + 1:
            return None
        if producer.seq <= state.seq:
            kept = state.answers.get(producer.seq)
            if kept is None:
                return Appended(nstep, None, None, duplicate=True)
            first, count = kept
            return Appended(first + count, first, count, duplicate=True)
        raise SequenceGap(
            f"producer {producer.id!r} sent sequence {producer.seq} before {state.seq + 1}",
            path="Producer-Seq",
            expected=state.seq + 1,
        )

    def record(self, producer: Producer, first: int, count: int) -> None:
        """Note ``producer``'s batch as admitted at ``first`` with ``count`` frames."""
        state = self._states.pop(producer.id, None)
        if state is None or state.epoch != producer.epoch:
            state = _State(producer.epoch, producer.seq)
        state.seq = producer.seq
        state.answers[producer.seq] = (first, count)
        while len(state.answers) > MAX_ANSWERS:
            state.answers.popitem(last=False)
        self._states[producer.id] = state  # now the most recently committed
        while len(self._states) > MAX_PRODUCERS:
            self._states.popitem(last=False)


def _parse_entry(entry: Any, where: str) -> tuple[str, _State]:
    if not isinstance(entry, dict) or set(entry) != {"id", "epoch", "seq", "answers"}:
        raise InvalidRecord("a producer entry is {id, epoch, seq, answers}", path=where)
    producer_id, epoch, seq, answers = entry["id"], entry["epoch"], entry["seq"], entry["answers"]
    if not isinstance(producer_id, str) or _ID.fullmatch(producer_id) is None:
        raise InvalidRecord(f"producer id {producer_id!r} is malformed", path=where)
    if not _counter(epoch) or not _counter(seq):
        raise InvalidRecord("a producer's epoch and seq are integers in [0, 2**53)", path=where)
    if not isinstance(answers, list) or not 0 < len(answers) <= MAX_ANSWERS:
        raise InvalidRecord(f"answers must be 1 to {MAX_ANSWERS} [seq, first, count]", path=where)
    state = _State(epoch, seq)
    previous = -1
    for answer in answers:
        if (
            not isinstance(answer, list)
            or len(answer) != 3
            or not all(_counter(v) for v in answer)
            or not previous < answer[0] <= seq
        ):
            raise InvalidRecord(
                "each answer is [seq, first, count], sequences increasing up to seq", path=where
            )
        previous = answer[0]
        state.answers[answer[0]] = (answer[1], answer[2])
    if previous != seq:
        raise InvalidRecord("the last answer is the producer's last sequence", path=where)
    return producer_id, state
