// Registers or removes the Windows service with node-windows (WinSW). Run elevated:
//   node service.mjs install|uninstall <installDir>
// install.ps1 calls this after installing the package and node-windows into <installDir>.
import { createRequire } from 'node:module';
import { buildServiceDefinition } from './service-definition.mjs';

const [action, installDir] = process.argv.slice(2);
if ((action !== 'install' && action !== 'uninstall') || !installDir) {
  console.error('usage: node service.mjs install|uninstall <installDir>');
  process.exit(2);
}
const require = createRequire(`${installDir}\\`);
const { Service } = require('node-windows');
const definition = buildServiceDefinition({
  installDir,
  programData: process.env.ProgramData ?? 'C:\\ProgramData',
});
const service = new Service(definition);
service.on('install', () => {
  console.log(`installed service ${definition.name}; starting`);
  service.start();
});
service.on('alreadyinstalled', () => console.log(`service ${definition.name} is already installed`));
service.on('uninstall', () => console.log(`removed service ${definition.name}`));
service.on('error', (error) => {
  console.error(`service ${action} failed: ${error}`);
  process.exitCode = 1;
});
if (action === 'install') service.install();
else service.uninstall();
