"""The HTTP service: `ukr serve` answers the application API over HTTP (`service.app`)."""
