"""TORQUE backend: IFL binding, batch-server adapter, scheduler-event listener."""
