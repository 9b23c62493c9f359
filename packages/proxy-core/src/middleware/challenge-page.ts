/**
 * A pure-JavaScript SHA-256 of a Uint8Array (returns a Uint8Array of 32),
 * for pages served over plain HTTP to a non-loopback host, where
 * `crypto.subtle` is missing (it needs a secure context). Kept as source
 * text: it runs in the browser, and the tests evaluate it against Node's.
 */
export const SHA256_FALLBACK_JS = `function sha256js(m){var K=[0x428a2f98,0x71374491,0xb5c0fbcf,0xe9b5dba5,0x3956c25b,0x59f111f1,0x923f82a4,0xab1c5ed5,0xd807aa98,0x12835b01,0x243185be,0x550c7dc3,0x72be5d74,0x80deb1fe,0x9bdc06a7,0xc19bf174,0xe49b69c1,0xefbe4786,0x0fc19dc6,0x240ca1cc,0x2de92c6f,0x4a7484aa,0x5cb0a9dc,0x76f988da,0x983e5152,0xa831c66d,0xb00327c8,0xbf597fc7,0xc6e00bf3,0xd5a79147,0x06ca6351,0x14292967,0x27b70a85,0x2e1b2138,0x4d2c6dfc,0x53380d13,0x650a7354,0x766a0abb,0x81c2c92e,0x92722c85,0xa2bfe8a1,0xa81a664b,0xc24b8b70,0xc76c51a3,0xd192e819,0xd6990624,0xf40e3585,0x106aa070,0x19a4c116,0x1e376c08,0x2748774c,0x34b0bcb5,0x391c0cb3,0x4ed8aa4a,0x5b9cca4f,0x682e6ff3,0x748f82ee,0x78a5636f,0x84c87814,0x8cc70208,0x90befffa,0xa4506ceb,0xbef9a3f7,0xc67178f2];
var H=[0x6a09e667,0xbb67ae85,0x3c6ef372,0xa54ff53a,0x510e527f,0x9b05688c,0x1f83d9ab,0x5be0cd19];
var l=m.length,n=((l+72)>>6)<<6,b=new Uint8Array(n),w=new Int32Array(64),i,o,x,y;b.set(m);b[l]=128;
var hi=Math.floor(l/536870912),lo=(l*8)>>>0;b[n-8]=hi>>>24;b[n-7]=(hi>>>16)&255;b[n-6]=(hi>>>8)&255;b[n-5]=hi&255;
b[n-4]=lo>>>24;b[n-3]=(lo>>>16)&255;b[n-2]=(lo>>>8)&255;b[n-1]=lo&255;
for(o=0;o<n;o+=64){for(i=0;i<16;i++)w[i]=(b[o+4*i]<<24)|(b[o+4*i+1]<<16)|(b[o+4*i+2]<<8)|b[o+4*i+3];
for(i=16;i<64;i++){x=w[i-15];y=w[i-2];w[i]=(w[i-16]+(((x>>>7)|(x<<25))^((x>>>18)|(x<<14))^(x>>>3))+w[i-7]+(((y>>>17)|(y<<15))^((y>>>19)|(y<<13))^(y>>>10)))|0;}
var a=H[0],c=H[1],d=H[2],e=H[3],f=H[4],g=H[5],h=H[6],k=H[7];
for(i=0;i<64;i++){var t1=(k+(((f>>>6)|(f<<26))^((f>>>11)|(f<<21))^((f>>>25)|(f<<7)))+((f&g)^(~f&h))+K[i]+w[i])|0;
var t2=((((a>>>2)|(a<<30))^((a>>>13)|(a<<19))^((a>>>22)|(a<<10)))+((a&c)^(a&d)^(c&d)))|0;
k=h;h=g;g=f;f=(e+t1)|0;e=d;d=c;c=a;a=(t1+t2)|0;}
H[0]=(H[0]+a)|0;H[1]=(H[1]+c)|0;H[2]=(H[2]+d)|0;H[3]=(H[3]+e)|0;H[4]=(H[4]+f)|0;H[5]=(H[5]+g)|0;H[6]=(H[6]+h)|0;H[7]=(H[7]+k)|0;}
var r=new Uint8Array(32);for(i=0;i<8;i++){r[4*i]=H[i]>>>24;r[4*i+1]=(H[i]>>>16)&255;r[4*i+2]=(H[i]>>>8)&255;r[4*i+3]=H[i]&255;}return r;}`;

/**
 * The under_attack challenge page: finds a counter such that
 * SHA-256(`<token>:<counter>`) starts with `difficulty` zero bits (WebCrypto
 * in batches of 256, the pure-JS fallback without a secure context), POSTs
 * `token=…&counter=…` to `solvePath`, and on success reloads the same URL
 * with a GET. `token` holds only `[A-Za-z0-9_.-]` (safe inside the script).
 */
export function challengePage(token: string, difficulty: number, solvePath: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="robots" content="noindex,nofollow">
<meta name="viewport" content="width=device-width,initial-scale=1"><title>Checking your browser</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:34em;margin:15vh auto;padding:0 1em;color:#222}</style></head>
<body><h1 id="proxyd-status">Checking your browser…</h1>
<p>This site is protecting itself from abuse. Your browser is solving a short puzzle; the page will continue by itself.</p>
<noscript><p>Please enable JavaScript to continue.</p></noscript>
<script>
(function(){
var T=${JSON.stringify(token)},D=${difficulty},P=${JSON.stringify(solvePath)};
${SHA256_FALLBACK_JS}
var S=window.crypto&&window.crypto.subtle,E=new TextEncoder();
function dg(s){var u=E.encode(s);return S?S.digest("SHA-256",u).then(function(b){return new Uint8Array(b)}):Promise.resolve(sha256js(u))}
function ok(h){var bits=D,i=0;for(;bits>=8;bits-=8,i++)if(h[i]!==0)return false;return bits===0||(h[i]>>(8-bits))===0}
function step(c){var a=[];for(var i=0;i<256;i++)a.push(dg(T+":"+(c+i)));
return Promise.all(a).then(function(hs){for(var i=0;i<hs.length;i++)if(ok(hs[i]))return c+i;return step(c+256)})}
function fail(){document.getElementById("proxyd-status").textContent="Verification failed. Reload the page to try again."}
step(0).then(function(n){return fetch(P,{method:"POST",credentials:"same-origin",headers:{"content-type":"application/x-www-form-urlencoded"},body:"token="+encodeURIComponent(T)+"&counter="+n})})
.then(function(r){if(r.ok)location.replace(location.href);else fail()},fail);
})();
</script></body></html>
`;
}
