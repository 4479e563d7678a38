"""The command line: `main` dispatches to one module per command (`cmd_run`, `cmd_translate`,
`cmd_explain`, `cmd_whatif`; `vnc-server` is the simulators')."""
