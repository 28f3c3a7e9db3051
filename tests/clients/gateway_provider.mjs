// The `@ai-sdk/openai` provider pointed at the gateway (GATEWAY_BASE_URL, GATEWAY_API_KEY),
// recording the body of every request it sends and of every JSON response it receives.
import { createOpenAI } from '@ai-sdk/openai';

export function gatewayProvider() {
  const sent = [];
  const received = [];
  const openai = createOpenAI({
    baseURL: process.env.GATEWAY_BASE_URL,
    apiKey: process.env.GATEWAY_API_KEY,
    fetch: async (url, init) => {
      sent.push(JSON.parse(init.body));
      const response = await fetch(url, init);
      if ((response.headers.get('content-type') || '').startsWith('application/json')) {
        received.push(await response.clone().json());
      }
      return response;
    },
  });
  return { openai, sent, received };
}
