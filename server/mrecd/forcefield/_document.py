"""The force-field document: ``name``, ``units``, ``source``, ``special_bonds``,
``styles`` (forcefield.md §2), checked as a version-2 reader must (§12.1 F1–F12)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ..errors import InvalidRecord
from ._frozen import FrozenDict
from ._names import CATEGORY_PATTERN, block_name
from ._registry import ENDPOINT_KEYS, MIXING_RULES, ONE_FOUR_MODES, is_registered
from ._units import check_units

__all__ = ["ParamValue", "Style", "check_document"]

ParamValue = float | int | str
_SHA256: Final = re.compile(r"^[0-9a-f]{64}$")
_PATH: Final = "forcefield"


@dataclass(frozen=True, slots=True)
class Style:
    """One entry of ``styles``: a functional form and where its table lives.

    Attributes
    ----------
    category, style
        What the rows parameterize and the form's name (``"pair"``, ``"lj/cut"``).
    params
        Style-level parameters (``cutoff``, ``mixing`` ...), as stored.
    expression
        Energy of one term (§8), or ``None``.
    endpoint_key
        ``"type"``, ``"class"`` or ``"smirks"`` (§4).
    block
        The table's block name, ``<category>.<percent-encoded style>``.
    position
        Index of the entry in ``styles`` (the visiting order of lookups).
    """

    category: str
    style: str
    params: Mapping[str, ParamValue] = field(default_factory=dict)
    expression: str | None = None
    endpoint_key: str = "type"
    block: str = ""
    position: int = 0

    @property
    def registered(self) -> bool:
        """Whether the style is in the registry of §7.2."""
        return is_registered(self.category, self.style)

    @property
    def priceable(self) -> bool:
        """Registered, or unregistered with an ``expression`` (§7.1)."""
        return self.registered or self.expression is not None

    def to_dict(self) -> dict[str, Any]:
        """The entry as the reference writer stores it (defaults omitted)."""
        out: dict[str, Any] = {"category": self.category, "style": self.style}
        if self.params:
            out["params"] = dict(self.params)
        if self.expression is not None:
            out["expression"] = self.expression
        if self.endpoint_key != "type":
            out["endpoint_key"] = self.endpoint_key
        return out


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_name(doc: Mapping[str, Any]) -> None:
    if not isinstance(doc.get("name"), str):
        raise InvalidRecord(
            "name is required and must be a string (F6, §2.1)", path=f"{_PATH}.name"
        )


def _check_source(doc: Mapping[str, Any]) -> None:
    if "source" not in doc:
        return
    source, path = doc["source"], f"{_PATH}.source"
    if not isinstance(source, Mapping):
        raise InvalidRecord("source must be an object (F12, §2.3)", path=path)
    if not isinstance(source.get("format"), str):
        raise InvalidRecord(
            "source.format is required and must be a string (F12, §2.3)", path=f"{path}.format"
        )
    if "uri" in source and not isinstance(source["uri"], str):
        raise InvalidRecord("source.uri must be a string (§2.3)", path=f"{path}.uri")
    if "sha256" in source and not (
        isinstance(source["sha256"], str) and _SHA256.match(source["sha256"])
    ):
        raise InvalidRecord(
            "source.sha256 must be exactly 64 lowercase hex digits (F12, §2.3)",
            path=f"{path}.sha256",
        )


def _check_special_bonds(doc: Mapping[str, Any]) -> None:
    if "special_bonds" not in doc:
        return
    weights, path = doc["special_bonds"], f"{_PATH}.special_bonds"
    if not isinstance(weights, Mapping) or set(weights) != {"lj", "coul"}:
        raise InvalidRecord(
            "special_bonds must hold exactly the keys lj and coul (F11, §2.4)", path=path
        )
    for key in ("lj", "coul"):
        triple = weights[key]
        if not (
            isinstance(triple, list) and len(triple) == 3 and all(_is_number(w) for w in triple)
        ):
            raise InvalidRecord(
                f"special_bonds.{key} must be exactly three numbers [w12, w13, w14] (F11, §2.4)",
                path=f"{path}.{key}",
            )


def _check_params(params: Any, path: str) -> dict[str, ParamValue]:
    if not isinstance(params, Mapping):
        raise InvalidRecord(
            "params must be an object {name: number or string} (F8, §2.5)", path=path
        )
    for key, value in params.items():
        # bool is an int in Python but true/false are not numbers here (§2.5).
        if not (_is_number(value) or isinstance(value, str)):
            raise InvalidRecord(
                f"style-level parameter {key!r} = {value!r} must be a finite number or a string"
                " (F8, §2.5)",
                path=f"{path}.{key}",
            )
    return dict(params)


def _check_reserved(category: str, style: str, params: Mapping[str, ParamValue], path: str) -> None:
    if category != "pair":
        return  # the reserved names are reserved for pair styles only (§2.6)
    mixing = params.get("mixing")
    # Unknown mixing/special values are an open point (§15.8); the seed's
    # model refuses them, and a rule nobody can apply is never intended.
    if "mixing" in params and mixing not in MIXING_RULES:
        raise InvalidRecord(
            f"mixing {mixing!r} is not one of {sorted(MIXING_RULES)} (§2.6)", path=f"{path}.mixing"
        )
    if "special" in params and params["special"] not in ("lj", "coul"):
        raise InvalidRecord(
            f"special {params['special']!r} must be 'lj' or 'coul' (§2.6)", path=f"{path}.special"
        )
    if style == "lj/charmm" and "one_four" in params and params["one_four"] not in ONE_FOUR_MODES:
        raise InvalidRecord(
            f"pair.lj/charmm one_four {params['one_four']!r} must be absent, 'regular' or"
            " 'epsilon14' (F24, §7.4)",
            path=f"{path}.one_four",
        )


def _check_entry(entry: Any, position: int) -> Style:
    path = f"{_PATH}.styles[{position}]"
    if not isinstance(entry, Mapping):
        raise InvalidRecord("a style entry is an object (F8, §2.5)", path=path)
    category, style = entry.get("category"), entry.get("style")
    if not isinstance(category, str) or not CATEGORY_PATTERN.match(category):
        raise InvalidRecord(
            f"category {category!r} must match ^[a-z][a-z0-9_]*$ (F8, §2.5)",
            path=f"{path}.category",
        )
    if not isinstance(style, str) or not style:
        raise InvalidRecord("style must be a non-empty string (F8, §2.5)", path=f"{path}.style")
    params = _check_params(entry.get("params", {}), f"{path}.params")
    _check_reserved(category, style, params, f"{path}.params")
    expression = entry.get("expression")
    if "expression" in entry and not isinstance(expression, str):
        raise InvalidRecord("expression must be a string (F8, §8)", path=f"{path}.expression")
    key = entry.get("endpoint_key", "type")
    if key not in ENDPOINT_KEYS:
        raise InvalidRecord(
            f"endpoint_key {key!r} must be one of type, class, smirks (F8, §4)",
            path=f"{path}.endpoint_key",
        )
    return Style(
        category, style, FrozenDict(params), expression, key, block_name(category, style), position
    )


def _normalized_entry(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The entry as written: ``params`` dropped when empty, ``endpoint_key`` when ``"type"``."""
    return {
        k: v
        for k, v in entry.items()
        if not (k == "params" and v == {}) and not (k == "endpoint_key" and v == "type")
    }


def check_document(document: Mapping[str, Any]) -> tuple[dict[str, Any], tuple[Style, ...]]:
    """Validate a version-2 document; return it normalized, and its styles.

    Parameters
    ----------
    document
        The section's attribute map (finite JSON).

    Returns
    -------
    tuple
        ``(document, styles)``: the document with every unknown key kept and
        each style entry as the reference writer stores it; the parsed entries.

    Raises
    ------
    InvalidRecord
        Any of F1–F12 and F24 of §12.1, naming the field and the rule.
    """
    _check_name(document)
    if "units" not in document:
        raise InvalidRecord("units is required (F1, §2.2)", path=f"{_PATH}.units")
    check_units(document["units"], path=f"{_PATH}.units")
    _check_source(document)
    _check_special_bonds(document)
    entries = document.get("styles")
    if not isinstance(entries, list):
        # The JSON shape has styles optional; the text requires it (§15.3).
        raise InvalidRecord(
            "styles is required: a list of style entries (F7, §2.5)", path=f"{_PATH}.styles"
        )
    styles = tuple(_check_entry(entry, i) for i, entry in enumerate(entries))
    seen: dict[tuple[str, str], int] = {}
    for style in styles:
        pair = (style.category, style.style)
        if pair in seen:
            raise InvalidRecord(
                f"({style.category}, {style.style}) occurs twice, at entries {seen[pair]} and"
                f" {style.position} (F9, §2.5)",
                path=f"{_PATH}.styles[{style.position}]",
            )
        seen[pair] = style.position
    normalized = dict(document)
    normalized["styles"] = [_normalized_entry(entry) for entry in entries]
    return normalized, styles
