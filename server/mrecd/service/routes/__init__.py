"""One router per resource: records, trajectory, operations."""
