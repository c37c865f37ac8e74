"""The ``ground`` stage of a graph build: grounding and confidence over the units' records.

Runs between extraction and resolution (`GraphIndexer.run`). It reads the stored records (the
raw model output, never changed here) with their units' texts and hands resolution the shaped
copies, so changing ``graph.extraction.grounding``, ``grounding_min_similarity``,
``grounding_weight``, ``min_confidence`` or ``min_strength`` re-shapes the graph without a
model call: those settings are not part of the extraction fingerprint, but they are part of
the build digest, so a changed setting rebuilds. The rules: `domain.extraction.grounding`.
Source: seed 000 §4.1-§4.2.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from unified_kg_rag.domain.extraction.grounding import ShapingCounts, ShapingRules, shape_record
from unified_kg_rag.domain.extraction.records import ExtractionRecord
from unified_kg_rag.ingestion.units import UnitText

__all__ = ["ShapedRecords", "shape_records"]

logger = logging.getLogger(__name__)


@dataclass
class ShapedRecords:
    """The records resolution reads, and what the rules did to them.

    Attributes:
        records: text unit id → its shaped record (units without a record are absent).
        counts: the rules' counts over every unit (a record shared by identical units counts
            once per unit, as resolution reads it once per unit).
        units_changed: units whose record lost or down-weighted an item.
    """

    records: dict[str, ExtractionRecord] = field(default_factory=dict)
    counts: ShapingCounts = field(default_factory=ShapingCounts)
    units_changed: int = 0


def shape_records(
    units: Sequence[UnitText], records: Mapping[str, ExtractionRecord], rules: ShapingRules
) -> ShapedRecords:
    """Return each unit's record after grounding and the confidence rule.

    Args:
        units: the index's text units (id, text, path), in build order.
        records: text unit id → its extraction record (the extraction stage's output).
        rules: ``graph.extraction``'s `ExtractionConfig.shaping_rules`.

    Returns:
        The shaped records of the units that have one, in ``units`` order, and the counts.
    """
    out = ShapedRecords()
    done: dict[tuple[str, str], tuple[ExtractionRecord, ShapingCounts]] = {}
    for unit in units:
        record = records.get(unit.id)
        if record is None:
            continue
        key = (record.fingerprint, unit.text)  # identical texts share a record and a result
        if key not in done:
            done[key] = shape_record(record, unit.text, rules)
        shaped, counts = done[key]
        out.records[unit.id] = shaped
        out.counts.add(counts)
        out.units_changed += shaped is not record
    if out.counts.removed or out.counts.weighted:
        logger.info(
            "grounding (%s) and confidence: %d items removed, %d down-weighted in %d units",
            rules.grounding, out.counts.removed, out.counts.weighted, out.units_changed,
        )
    return out
