"""An index's own state: the document delta, the single-writer lease rule, stored facts."""
