"""The offline commands' input and output: manifests from files, directories and standard input,
and the JSON, YAML and table renderings of a translation."""
