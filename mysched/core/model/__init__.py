"""What the scheduler reasons about, as plain data: jobs, nodes, queues and the snapshot of the
farm (`batch`), a job's request (`request`), downtime windows (`windows`), the `Plan` a cycle
produces (`plan`) and the reasons in it (`reasons`). Nothing here decides anything."""
