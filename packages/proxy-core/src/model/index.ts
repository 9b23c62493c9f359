// Temporary, for branches in flight that still import `@proxyd/proxy-core/model`: the model is `@proxyd/model`.
export * from '@proxyd/model';
