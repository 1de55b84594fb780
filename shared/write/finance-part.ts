import { formatAmount } from '../domain/decimal.ts';
import { type Cost, financeFieldsJson, summarizeCosts } from '../domain/finance.ts';
import { AMOUNT_LIMIT_UNITS, LIMITS } from '../domain/records.ts';
import { textFingerprint } from './fingerprint.ts';
import { DYNAMODB_ITEM_BYTES, itemSize } from './item-size.ts';
import { financeItem, type TeamIdentity } from './items.ts';

const count = (n: number) => n.toLocaleString('en');

/**
 * A team's finance part from its costs (its servers' and its cost lines): the summary, the
 * response's fields as served, their fingerprint, and what keeps the part from being stored
 * (docs/contract.md, section 7: each total below 100,000,000,000; the item within DynamoDB's
 * 400 KB, in bytes as DynamoDB counts them). The import's validation and the sync judge a team's
 * finance by this one function.
 */
export function financePart(team: TeamIdentity, costs: Iterable<Cost>) {
  const summary = summarizeCosts(costs);
  const json = financeFieldsJson(summary);
  const fingerprint = textFingerprint(json);
  const limit = LIMITS.amountBelow.toLocaleString('en');
  const problems: string[] = [];
  for (const total of summary.totals) {
    if (total.units >= AMOUNT_LIMIT_UNITS) {
      problems.push(`the team's ${total.currency} costs add up to ${formatAmount(total.units)}, not below ${limit}`);
    }
  }
  if (summary.grandTotal >= AMOUNT_LIMIT_UNITS) {
    problems.push(
      `the team's costs add up to ${formatAmount(summary.grandTotal)} in all currencies, not below ${limit}`,
    );
  }
  // The finance item is the one that grows (both its copies, and the small heads, stay far within a
  // transaction's 4 MB).
  const bytes = itemSize(financeItem(team, json, fingerprint));
  if (bytes > DYNAMODB_ITEM_BYTES) {
    problems.push(
      `its finance summary would be ${count(bytes)} bytes in DynamoDB, ` +
        `more than the ${count(DYNAMODB_ITEM_BYTES)} an item may hold`,
    );
  }
  return { summary, json, fingerprint, problems };
}
