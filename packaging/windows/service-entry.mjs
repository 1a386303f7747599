// The script the Windows service runs (node-windows' wrapper forks it with the `run ...` arguments).
// node-windows stops a service started with `stopparentfirst` by sending the IPC message "shutdown" to this
// process, not a signal (Windows has no SIGTERM, and killing the child would skip the graceful drain). This
// turns that message into the SIGINT the forwarder already handles (drain in-flight deliveries, then exit).
import { main } from '../../dist/cli/main.js';

process.on('message', (message) => {
  if (message === 'shutdown') process.emit('SIGINT', 'SIGINT');
});
// The IPC channel must not keep the process alive once the forwarder has stopped.
process.channel?.unref();
process.exitCode = await main(process.argv);
