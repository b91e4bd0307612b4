import { priceTask } from './task.js';

export const priceCents = priceTask({
  id: 'price-cents',
  title: 'unit prices with three decimals rounded half up to whole cents (a half cent rounds up)',
  payload: 'tasks/price-cents',
  expected: 'accept',
});
