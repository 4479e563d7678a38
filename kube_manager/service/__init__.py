"""The daemon as a service: the pipeline wiring, the event dispatcher between the watchers and the
translator, the daemon's start-up and terms of leadership, and when a leader settles its heap."""
