/** The one redactor (src/redact.ts): configured values with their credential parts, and credential shapes. */
import { describe, expect, it } from 'vitest';
import { REDACTED, redactedMessage, redactText, registerSecret } from '../../src/redact.ts';
import { Secret } from '../../src/secret.ts';

describe('redactText', () => {
  it('removes a configured secret and the parts a receiver may echo on their own', () => {
    new Secret('Bearer abcDEF123456-token', 'env T');
    new Secret(`Basic ${Buffer.from('svc-user:B4sicPassw0rd').toString('base64')}`, 'env B');
    new Secret('https://hooks.slack.com/services/T01/B02/SlackTokenXyz1234567890', 'env S');
    new Secret(
      'Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey=SasKeyValue0123456789+/=;EntityPath=hub',
      'env EH',
    );
    new Secret('whsec_c2lnbmluZ2tleWJhc2U2NA==', 'file /x');
    const echoes = [
      'invalid token abcDEF123456-token',
      'user svc-user:B4sicPassw0rd / B4sicPassw0rd',
      'no such path /services/T01/B02/SlackTokenXyz1234567890',
      'key SasKeyValue0123456789+/= rejected',
      'key c2lnbmluZ2tleWJhc2U2NA== wrong',
      `escaped ${encodeURIComponent('SasKeyValue0123456789+/=')}`,
    ];
    for (const echo of echoes) {
      const out = redactText(echo);
      expect(out, echo).toContain(REDACTED);
      for (const secret of [
        'abcDEF123456-token',
        'B4sicPassw0rd',
        'SlackTokenXyz1234567890',
        'SasKeyValue0123456789',
        'c2lnbmluZ2tleWJhc2U2NA',
      ]) {
        expect(out).not.toContain(secret);
      }
    }
  });

  it('a URL given in a secret field without credentials (scheme, host, port) is not a secret: its host stays readable', () => {
    new Secret('http://alertmanager-2.monitoring:9093', 'inline');
    new Secret('https://alertmanager-3.monitoring:9093/', 'inline');
    new Secret('https://sef:Pa55-for-am-1@alertmanager-1.monitoring:9093', 'env AM1');
    new Secret('https://hooks.example.net/services/T01/B02/aSlackStyleSecretPath123', 'env HOOK');
    for (const text of [
      'sink am urls[1] (http://alertmanager-2.monitoring:9093): network error ECONNREFUSED',
      'sink am urls[2] (https://alertmanager-3.monitoring:9093): HTTP 503',
      'sink am urls[0] (https://alertmanager-1.monitoring:9093): HTTP 401',
      'sink hook (https://hooks.example.net): HTTP 404',
    ]) {
      expect(redactText(text)).toBe(text);
    }
    expect(redactText('https://sef:Pa55-for-am-1@alertmanager-1.monitoring:9093/api/v2/alerts')).toBe(
      'https://[redacted]@alertmanager-1.monitoring:9093/api/v2/alerts',
    );
    expect(redactText('posted to https://hooks.example.net/services/T01/B02/aSlackStyleSecretPath123')).toBe(
      'posted to [redacted]',
    );
  });

  it('removes credential shapes that were never configured', () => {
    const cases: Array<[string, string]> = [
      ['GET http://u:p4ss@host:8080/x failed', 'p4ss'],
      ['https://acct.blob.core.windows.net/c?sv=2022&sig=AbCdEf%2B123&se=2030', 'AbCdEf'],
      ['https://fn.azurewebsites.net/api/x?code=FunctionKey123==', 'FunctionKey123'],
      ['Authorization: Bearer eyJhbGciOi.eyJzdWIi.sig', 'eyJhbGciOi'],
      ['SharedAccessSignature sr=sb%3A%2F%2Fns&sig=Zm9vYmFy&se=1&skn=send', 'Zm9vYmFy'],
      ['Endpoint=sb://x/;SharedAccessKeyName=a;SharedAccessKey=Tm90UmVhbA==', 'Tm90UmVhbA'],
      ['header api-key: 0123456789abcdef', '0123456789abcdef'],
      ['{"api-key":"k3y-value-in-json"}', 'k3y-value-in-json'],
    ];
    for (const [text, secret] of cases) expect(redactText(text), text).not.toContain(secret);
  });

  it('keeps JSON valid and leaves ordinary text alone', () => {
    registerSecret('json"quoted\\secret');
    const line = JSON.stringify({ msg: 'failed: json"quoted\\secret and Bearer tok3nValue\\n', n: 1 });
    const out = redactText(line);
    expect(() => JSON.parse(out)).not.toThrow();
    expect(out).not.toContain('quoted');
    expect(out).not.toContain('tok3nValue');
    expect(redactText('sink alerts: HTTP 503 busy (retryable)')).toBe(
      'sink alerts: HTTP 503 busy (retryable)',
    );
  });

  it('redactedMessage redacts an error message', () => {
    registerSecret('value-Secret-42');
    expect(redactedMessage(new Error('x value-Secret-42'))).toBe(`x ${REDACTED}`);
    expect(redactedMessage('plain value-Secret-42')).toBe(`plain ${REDACTED}`);
  });
});
