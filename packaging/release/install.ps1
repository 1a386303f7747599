<#
.SYNOPSIS
  Installs (or removes) scheduled-events-forwarder from this release zip as a Windows service. Needs no
  Node.js: scheduled-events-forwarder.exe carries its own runtime. Run in an elevated PowerShell from the
  unpacked folder.
.DESCRIPTION
  1. Copies scheduled-events-forwarder.exe and the service wrapper (scheduled-events-forwarder-service.exe,
     WinSW 1.17 as shipped in the node-windows npm package; MIT) to -InstallDir.
  2. Creates %ProgramData%\scheduled-events-forwarder (state, config, logs), readable only by SYSTEM and
     Administrators; never on D:\, the Azure temporary disk that Redeploy and Preempt wipe.
  3. Copies the example config if none exists (state under %ProgramData%) and validates it.
  4. Writes the wrapper's XML (restart forever on failure, Ctrl+C on stop so in-flight deliveries drain),
     registers the service `scheduled-events-forwarder` (LocalSystem, automatic start) and starts it.
  Secrets: put each secret in a file under %ProgramData%\scheduled-events-forwarder\secrets\ and reference it
  from forwarder.yaml as { file: C:\ProgramData\scheduled-events-forwarder\secrets\NAME }.
.EXAMPLE
  .\install.ps1
.EXAMPLE
  .\install.ps1 -Uninstall      # stops and removes the service and the program; keeps %ProgramData% (state, config)
#>
param(
  [string]$InstallDir = (Join-Path $env:ProgramFiles 'scheduled-events-forwarder'),
  [switch]$Uninstall
)
$ErrorActionPreference = 'Stop'
$name = 'scheduled-events-forwarder'
$here = Split-Path -Parent $MyInvocation.MyCommand.Path
$exe = Join-Path $InstallDir "$name.exe"
$wrapper = Join-Path $InstallDir "$name-service.exe"
$dataDir = Join-Path $env:ProgramData $name

if ($Uninstall) {
  if (Test-Path $wrapper) {
    & $wrapper stop | Out-Null
    & $wrapper uninstall
    if ($LASTEXITCODE) { throw 'service removal failed' }
  }
  Remove-Item -Recurse -Force $InstallDir -ErrorAction SilentlyContinue
  Write-Host "Removed the service and $InstallDir; kept $dataDir (state, config, logs)."
  return
}

& (Join-Path $here "$name.exe") --version | Out-Null
if ($LASTEXITCODE) { throw "$name.exe does not run on this machine (it is built for Windows x64)" }

# Upgrade: stop the running service before its executable is replaced.
$existing = Get-Service -Name $name -ErrorAction SilentlyContinue
if ($existing -and $existing.Status -ne 'Stopped') { Stop-Service -Name $name }

New-Item -ItemType Directory -Force -Path $InstallDir | Out-Null
Copy-Item -Force (Join-Path $here "$name.exe") $exe
Copy-Item -Force (Join-Path $here "$name-service.exe") $wrapper

New-Item -ItemType Directory -Force -Path (Join-Path $dataDir 'secrets') | Out-Null
New-Item -ItemType Directory -Force -Path (Join-Path $dataDir 'logs') | Out-Null
# Owner-only: remove inherited ACEs, grant SYSTEM and Administrators full control.
& icacls $dataDir /inheritance:r /grant:r 'SYSTEM:(OI)(CI)F' 'Administrators:(OI)(CI)F' | Out-Null

$config = Join-Path $dataDir 'forwarder.yaml'
$stateDir = Join-Path $dataDir 'state'
if (-not (Test-Path $config)) {
  # The example keeps its state in ./state; under the service it lives in %ProgramData%.
  (Get-Content -Raw (Join-Path $here 'forwarder.example.yaml')) `
    -replace '(?m)^stateDir: \./state$', "stateDir: '$stateDir'" `
    -replace '\./state/', ($stateDir.Replace('\', '/') + '/') |
    Set-Content -Encoding utf8 $config
  Write-Host "Wrote $config (edit it, then: Restart-Service $name)"
}
& $exe config validate $config
if ($LASTEXITCODE) { throw "configuration $config is invalid (see above)" }

# WinSW reads <wrapper name>.xml next to the wrapper.
$xml = @"
<service>
  <id>$name</id>
  <name>$name</name>
  <description>Azure Scheduled Events forwarder: IMDS -> durable outbox -> Event Hubs, webhooks, OpenTelemetry.</description>
  <executable>$exe</executable>
  <arguments>run --config "$config" --state-dir "$stateDir"</arguments>
  <workingdirectory>$dataDir</workingdirectory>
  <startmode>Automatic</startmode>
  <env name="NODE_ENV" value="production" />
  <logpath>$dataDir\logs</logpath>
  <logmode>rotate</logmode>
  <onfailure action="restart" delay="2 sec" />
  <onfailure action="restart" delay="10 sec" />
  <onfailure action="restart" delay="30 sec" />
  <resetfailure>1 hour</resetfailure>
  <stoptimeout>20 sec</stoptimeout>
</service>
"@
Set-Content -Encoding utf8 -Path ([System.IO.Path]::ChangeExtension($wrapper, '.xml')) -Value $xml

if (-not $existing) {
  & $wrapper install
  if ($LASTEXITCODE) { throw 'service registration failed' }
}
Start-Service -Name $name
Write-Host "Installed and started. Logs: $dataDir\logs\$name-service.err.log (the forwarder's JSON log lines); status: Get-Service $name"
