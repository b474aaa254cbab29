import { createServer, type AddressInfo } from 'node:net';
/** `host:port` (a name, an IPv4 address or a bracketed IPv6 one), capturing the host and the port. */
export const HOST_PORT = /^(\[[^\]]+\]|[^:\s]+):(\d{1,5})$/;

/** A TCP port free on 127.0.0.1 now (a rendezvous or a test server's port). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}
