"""Where a job goes: what runs on each node, kept between cycles (`tally`, `nodeindex`), the
node score (`score`), the one list of node checks every caller asks (`admission`), and the
placement of plain jobs (`placement`) and of whole requests (`requests`, `matching`)."""
