/** `host:port` (a name, an IPv4 address or a bracketed IPv6 one), capturing the host and the port. */
export const HOST_PORT = /^(\[[^\]]+\]|[^:\s]+):(\d{1,5})$/;
