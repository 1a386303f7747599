/**
 * Test-only: make client sockets set TCP_NODELAY. The SDK never sets it and rhea-promise bypasses rhea's
 * option, so on loopback Nagle + delayed ACK add ~40 ms steps to round trips. Wrapping net.connect/tls.connect
 * (which rhea looks up at connect time) removes them. Returns a function that restores the originals.
 */
import net from 'node:net';
import tls from 'node:tls';

export function enableClientNoDelay(): () => void {
  const originalNet = net.connect;
  const originalTls = tls.connect;
  const netConnect = (...args: unknown[]) => {
    const socket = (originalNet as (...a: unknown[]) => net.Socket)(...args);
    socket.setNoDelay(true);
    return socket;
  };
  const tlsConnect = (...args: unknown[]) => {
    const socket = (originalTls as (...a: unknown[]) => tls.TLSSocket)(...args);
    socket.setNoDelay(true);
    return socket;
  };
  (net as { connect: unknown }).connect = netConnect;
  (tls as { connect: unknown }).connect = tlsConnect;
  return () => {
    (net as { connect: unknown }).connect = originalNet;
    (tls as { connect: unknown }).connect = originalTls;
  };
}
