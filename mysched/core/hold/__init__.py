"""What keeps room back for somebody: reservations for wide jobs (`reservations`, `picking`),
the multi-core partition (`drains`), guarantee pools (`pools`) and scheduled downtimes
(`downtimes`). Each is a component that owns its state for one plan."""
