"""Who goes first: decayed usage (`usage`), each VO's standing in a cycle (`standing`) and
the order of the hot list and the share tree (`ordering`)."""
