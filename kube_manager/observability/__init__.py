"""What the daemon tells its operators besides its pages: Prometheus metrics, one-line `key=value`
logging, and the config API connection's status kept from every request."""
