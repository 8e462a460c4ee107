import type { Server as HttpServer, IncomingMessage } from 'node:http';
import type { Server as HttpsServer } from 'node:https';

/**
 * Makes a server's keep-alive timeout close only connections that are idle. node:http closes a
 * connection when its keepAliveTimeout fires, and its timers run before the event loop reads the
 * sockets: in a process that was busy for longer than the timeout (a loaded machine, a long
 * synchronous task), a request that reached the connection meanwhile is still unread, so the
 * close discards it and the kernel answers its sender with a reset (ECONNRESET), although the
 * sender did nothing wrong. Here the close waits until the sockets were read (setImmediate runs
 * after the poll phase) and is dropped if a byte came in: that request is served as any other.
 *
 * With a 'timeout' listener node:http leaves every socket timeout to it; these servers set no
 * other (server.timeout stays 0), so the keep-alive timeout is the only one that reaches it.
 */
export function closeOnlyIdleConnections(server: HttpServer | HttpsServer): void {
  server.on('timeout', (socket: IncomingMessage['socket']) => {
    const read = socket.bytesRead;
    setImmediate(() => {
      if (socket.bytesRead === read) socket.destroy();
    });
  });
}
