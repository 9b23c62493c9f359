import { type Static, Type } from 'typebox';
import { GlobalOptions } from './global-options.js';
import { Site } from './site.js';

/** A whole compiled Proxyfile. */
export const Config = Type.Object(
  {
    global: GlobalOptions,
    sites: Type.Array(Site),
  },
  { additionalProperties: false },
);
export type Config = Static<typeof Config>;
