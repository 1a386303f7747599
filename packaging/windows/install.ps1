<#
.SYNOPSIS
  Installs scheduled-events-forwarder as a Windows service (run in an elevated PowerShell).
.DESCRIPTION
  1. Checks Node.js >= 22.13 (Node 24 LTS recommended: winget install OpenJS.NodeJS.LTS).
  2. Installs the npm package and node-windows (the service wrapper, which ships WinSW) into -InstallDir.
  3. Creates %ProgramData%\scheduled-events-forwarder (state + config), readable only by SYSTEM and
     Administrators; never on D:\, the Azure temporary disk that Redeploy and Preempt wipe.
  4. Copies the example config if none exists and validates it.
  5. Registers and starts the service (packaging\windows\service.mjs).
  Secrets: put each secret in a file under %ProgramData%\scheduled-events-forwarder\secrets\ and reference it
  from forwarder.yaml as { file: C:\ProgramData\scheduled-events-forwarder\secrets\NAME }.
.EXAMPLE
  .\install.ps1 -Package .\scheduled-events-forwarder-0.1.0.tgz
#>
param(
  [string]$Package = 'scheduled-events-forwarder',
  [string]$InstallDir = (Join-Path $env:ProgramFiles 'scheduled-events-forwarder'),
  [string]$NodeWindows = 'node-windows@1.0.0-beta.8'
)
$ErrorActionPreference = 'Stop'

$nodeVersion = (& node -p 'process.versions.node')
if (-not $nodeVersion) { throw 'Node.js not found. Install Node.js 24 LTS first.' }
$parts = $nodeVersion.Split('.')
if ([int]$parts[0] -lt 22 -or ([int]$parts[0] -eq 22 -and [int]$parts[1] -lt 13)) {
  throw "Node.js $nodeVersion is too old; 22.13 or later is required (24 LTS recommended)."
}

New-Item -ItemType Directory -Force -Path $InstallDir | Out-Null
if (-not (Test-Path (Join-Path $InstallDir 'package.json'))) {
  '{"name":"scheduled-events-forwarder-install","private":true}' | Set-Content -Encoding ascii (Join-Path $InstallDir 'package.json')
}
Push-Location $InstallDir
try { & npm install --omit=dev --no-audit --no-fund --ignore-scripts $Package $NodeWindows; if ($LASTEXITCODE) { throw 'npm install failed' } }
finally { Pop-Location }

$dataDir = Join-Path $env:ProgramData 'scheduled-events-forwarder'
New-Item -ItemType Directory -Force -Path (Join-Path $dataDir 'secrets') | Out-Null
# Owner-only: remove inherited ACEs, grant SYSTEM and Administrators full control.
& icacls $dataDir /inheritance:r /grant:r 'SYSTEM:(OI)(CI)F' 'Administrators:(OI)(CI)F' | Out-Null

$pkgDir = Join-Path $InstallDir 'node_modules\scheduled-events-forwarder'
$config = Join-Path $dataDir 'forwarder.yaml'
if (-not (Test-Path $config)) { Copy-Item (Join-Path $pkgDir 'config\forwarder.example.yaml') $config }
& node (Join-Path $pkgDir 'dist\cli\main.js') config validate $config
if ($LASTEXITCODE) { throw "configuration $config is invalid (see above)" }

& node (Join-Path $pkgDir 'packaging\windows\service.mjs') install $InstallDir
if ($LASTEXITCODE) { throw 'service registration failed' }
Write-Host "Installed. Logs: $dataDir\logs\*.log (WinSW; the forwarder's own log is *.err.log) ; status: Get-Service scheduled-events-forwarder"
