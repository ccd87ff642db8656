/**
 * Response headers for every answer: a strict Content-Security-Policy (no inline script or style, nothing from
 * another origin), no framing, no referrer to other sites.
 */
import { secureHeaders as honoSecureHeaders } from 'hono/secure-headers';

export const securityHeaders = () =>
  honoSecureHeaders({
    contentSecurityPolicy: {
      defaultSrc: ["'none'"],
      scriptSrc: ["'self'"],
      styleSrc: ["'self'"],
      imgSrc: ["'self'", 'data:'],
      connectSrc: ["'self'"],
      formAction: ["'self'"],
      frameAncestors: ["'none'"],
      baseUri: ["'none'"],
    },
    referrerPolicy: 'same-origin',
    crossOriginResourcePolicy: 'same-origin',
    xFrameOptions: 'DENY',
  });
