export { type AdminAppOptions, createAdminApp } from './app.js';
export { HealthResponse } from './schemas.js';
