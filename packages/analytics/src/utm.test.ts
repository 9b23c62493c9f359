import { describe, expect, it } from 'vitest';
import { MAX_UTM_LENGTH, parseUtm } from './utm.js';

describe('parseUtm', () => {
  it('reads utm_source, utm_medium and utm_campaign, form-decoded and trimmed', () => {
    expect(parseUtm('utm_source=newsletter&utm_medium=email&utm_campaign=Spring+Sale%202026&x=1')).toEqual({
      source: 'newsletter',
      medium: 'email',
      campaign: 'Spring Sale 2026',
    });
    expect(parseUtm('a=1&utm_campaign=%20launch%20')).toEqual({ source: null, medium: null, campaign: 'launch' });
  });

  it('none without a query, without utm_ parameters, or with empty values', () => {
    const none = { source: null, medium: null, campaign: null };
    expect(parseUtm(undefined)).toEqual(none);
    expect(parseUtm('')).toEqual(none);
    expect(parseUtm('q=utm&page=2')).toEqual(none);
    expect(parseUtm('utm_source=&utm_medium&utm_campaign=+')).toEqual(none);
    expect(parseUtm('utm_term=shoes&utm_content=banner&xutm_source=a')).toEqual(none);
  });

  it('skips a value that is not valid percent-encoding; the first occurrence wins', () => {
    expect(parseUtm('utm_source=%E0%A4%A&utm_medium=cpc')).toEqual({ source: null, medium: 'cpc', campaign: null });
    expect(parseUtm('utm_source=first&utm_source=second').source).toBe('first');
  });

  it('cuts a long value to 96 characters', () => {
    expect(parseUtm(`utm_campaign=${'c'.repeat(500)}`).campaign).toBe('c'.repeat(MAX_UTM_LENGTH));
    expect(MAX_UTM_LENGTH).toBe(96);
  });
});
