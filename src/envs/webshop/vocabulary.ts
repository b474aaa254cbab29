// The words the WebShop catalogue is generated from: 12 departments, each with product types,
// attributes (WebShop's goal attributes), option dimensions (size, colour, flavour...) and a price range.

/** One option dimension of a department, e.g. `size` with its possible values. */
export interface OptionDimension {
  name: string;
  values: readonly string[];
}

/** One department: what its products are called and what can be asked of them. */
export interface Department {
  name: string;
  /** Product types (the noun a shopper asks for). */
  types: readonly string[];
  /** Attributes a goal can require (each a short phrase). */
  attributes: readonly string[];
  options: readonly OptionDimension[];
  /** Price range in dollars. */
  price: readonly [number, number];
  /** Materials or ingredients for titles and descriptions. */
  materials: readonly string[];
}

const COLOURS = [
  'black',
  'white',
  'navy blue',
  'grey',
  'red',
  'green',
  'beige',
  'pink',
  'brown',
  'purple',
  'yellow',
  'teal',
];
const APPAREL_SIZES = ['x-small', 'small', 'medium', 'large', 'x-large', 'xx-large'];
const SHOE_SIZES = ['6', '6.5', '7', '7.5', '8', '8.5', '9', '9.5', '10', '11', '12'];
const PACKS = ['pack of 1', 'pack of 2', 'pack of 3', 'pack of 6', 'pack of 12'];

export const DEPARTMENTS: readonly Department[] = [
  {
    name: 'men clothing',
    types: ['t-shirt', 'polo shirt', 'button down shirt', 'hoodie', 'chino pants', 'cargo shorts'],
    attributes: [
      'machine washable',
      'slim fit',
      'relaxed fit',
      'moisture wicking',
      'long sleeve',
      'short sleeve',
      'button closure',
      'cotton spandex',
      'wrinkle free',
      'quick drying',
    ],
    options: [
      { name: 'color', values: COLOURS },
      { name: 'size', values: APPAREL_SIZES },
    ],
    price: [9, 70],
    materials: ['cotton', 'polyester', 'linen', 'fleece'],
  },
  {
    name: 'women clothing',
    types: ['maxi dress', 'blouse', 'cardigan', 'leggings', 'pencil skirt', 'jumpsuit'],
    attributes: [
      'machine washable',
      'high waist',
      'loose fit',
      'button closure',
      'long sleeve',
      'elastic waistband',
      'soft material',
      'tummy control',
      'hand wash',
      'daily wear',
    ],
    options: [
      { name: 'color', values: COLOURS },
      { name: 'size', values: APPAREL_SIZES },
    ],
    price: [12, 90],
    materials: ['cotton', 'rayon', 'chiffon', 'knit'],
  },
  {
    name: 'shoes',
    types: ['running shoes', 'hiking boots', 'sandals', 'loafers', 'slippers', 'sneakers'],
    attributes: [
      'non slip',
      'rubber sole',
      'arch support',
      'memory foam',
      'lace up',
      'water resistant',
      'lightweight',
      'wide width',
      'breathable mesh',
      'slip on',
    ],
    options: [
      { name: 'color', values: COLOURS },
      { name: 'size', values: SHOE_SIZES },
    ],
    price: [18, 140],
    materials: ['leather', 'mesh', 'suede', 'canvas'],
  },
  {
    name: 'beauty',
    types: ['face moisturizer', 'lipstick', 'eye cream', 'nail polish', 'face serum', 'sunscreen lotion'],
    attributes: [
      'cruelty free',
      'paraben free',
      'long lasting',
      'fragrance free',
      'dermatologist tested',
      'vegan formula',
      'travel size',
      'for sensitive skin',
      'oil free',
      'hyaluronic acid',
    ],
    options: [
      { name: 'scent', values: ['unscented', 'lavender', 'rose', 'citrus', 'vanilla', 'coconut'] },
      { name: 'size', values: ['1 fl oz', '1.7 fl oz', '3.4 fl oz', '6.8 fl oz'] },
    ],
    price: [6, 60],
    materials: ['shea butter', 'aloe vera', 'vitamin c', 'jojoba oil'],
  },
  {
    name: 'hair care',
    types: ['shampoo', 'conditioner', 'hair mask', 'hair oil', 'hair brush', 'hair dryer'],
    attributes: [
      'sulfate free',
      'for dry hair',
      'color safe',
      'natural ingredients',
      'anti frizz',
      'heat protection',
      'for curly hair',
      'volumizing',
      'silicone free',
      'easy to use',
    ],
    options: [
      { name: 'scent', values: ['argan', 'tea tree', 'peppermint', 'coconut', 'unscented'] },
      { name: 'size', values: ['8 fl oz', '12 fl oz', '16 fl oz', '33.8 fl oz'] },
    ],
    price: [5, 80],
    materials: ['argan oil', 'keratin', 'biotin', 'rosemary'],
  },
  {
    name: 'grocery',
    types: ['protein bars', 'trail mix', 'green tea', 'ground coffee', 'dark chocolate', 'granola'],
    attributes: [
      'gluten free',
      'non gmo',
      'low sugar',
      'keto friendly',
      'high protein',
      'usda organic',
      'plant based',
      'dairy free',
      'individually wrapped',
      'kosher certified',
    ],
    options: [
      {
        name: 'flavor',
        values: ['original', 'chocolate', 'peanut butter', 'vanilla almond', 'sea salt', 'berry', 'caramel'],
      },
      { name: 'size', values: PACKS },
    ],
    price: [4, 45],
    materials: ['almonds', 'oats', 'cocoa', 'honey'],
  },
  {
    name: 'electronics',
    types: ['wireless earbuds', 'bluetooth speaker', 'usb c charger', 'power bank', 'smart watch', 'webcam'],
    attributes: [
      'fast charging',
      'noise cancelling',
      'long battery life',
      'water resistant',
      'hands free',
      'easy to carry',
      'high definition',
      'plug and play',
      'dual port',
      'compact size',
    ],
    options: [
      { name: 'color', values: ['black', 'white', 'silver', 'blue', 'rose gold'] },
      { name: 'style', values: ['standard', 'pro', 'mini', 'max'] },
    ],
    price: [15, 200],
    materials: ['aluminum', 'abs plastic', 'silicone', 'tempered glass'],
  },
  {
    name: 'home and bedding',
    types: ['bed sheet set', 'throw blanket', 'pillow covers', 'duvet cover', 'bath towels', 'blackout curtains'],
    attributes: [
      'machine washable',
      'easy care',
      'extra soft',
      'fade resistant',
      'hypoallergenic',
      'deep pocket',
      'thermal insulated',
      'quick drying',
      'wrinkle free',
      'eco friendly',
    ],
    options: [
      { name: 'color', values: COLOURS },
      { name: 'size', values: ['twin', 'full', 'queen', 'king', 'california king'] },
    ],
    price: [14, 120],
    materials: ['microfiber', 'bamboo', 'egyptian cotton', 'flannel'],
  },
  {
    name: 'furniture',
    types: ['office chair', 'bookshelf', 'coffee table', 'nightstand', 'bar stool', 'tv stand'],
    attributes: [
      'easy assembly',
      'solid wood',
      'height adjustable',
      'storage space',
      'living room',
      'metal frame',
      'space saving',
      'lumbar support',
      'mid century',
      'heavy duty',
    ],
    options: [
      { name: 'color', values: ['walnut', 'oak', 'espresso', 'white', 'black', 'grey'] },
      { name: 'size', values: ['small', 'medium', 'large', 'set of 2'] },
    ],
    price: [35, 400],
    materials: ['engineered wood', 'steel', 'rattan', 'pine'],
  },
  {
    name: 'kitchen',
    types: ['frying pan', 'knife set', 'cutting board', 'water bottle', 'coffee mug', 'food storage containers'],
    attributes: [
      'dishwasher safe',
      'bpa free',
      'non stick',
      'stainless steel',
      'easy clean',
      'leak proof',
      'oven safe',
      'heat resistant',
      'double wall',
      'microwave safe',
    ],
    options: [
      { name: 'color', values: ['black', 'red', 'sage green', 'cream', 'blue', 'grey'] },
      { name: 'size', values: ['8 inch', '10 inch', '12 inch', '16 oz', '24 oz', '32 oz'] },
    ],
    price: [8, 150],
    materials: ['cast iron', 'ceramic', 'glass', 'bamboo'],
  },
  {
    name: 'pet supplies',
    types: ['dog bed', 'cat litter', 'dog leash', 'cat tree', 'chew toys', 'pet shampoo'],
    attributes: [
      'easy clean',
      'non toxic',
      'durable',
      'for small dogs',
      'for large dogs',
      'odor control',
      'washable cover',
      'orthopedic',
      'reflective',
      'natural ingredients',
    ],
    options: [
      { name: 'color', values: ['brown', 'grey', 'blue', 'pink', 'green', 'black'] },
      { name: 'size', values: ['small', 'medium', 'large', 'x-large'] },
    ],
    price: [7, 110],
    materials: ['nylon', 'plush', 'rubber', 'sisal'],
  },
  {
    name: 'sports and outdoors',
    types: ['yoga mat', 'camping tent', 'resistance bands', 'dumbbells', 'hiking backpack', 'cycling gloves'],
    attributes: [
      'non slip',
      'lightweight',
      'easy to carry',
      'water resistant',
      'high density',
      'adjustable strap',
      'heavy duty',
      'quick setup',
      'eco friendly',
      'breathable mesh',
    ],
    options: [
      { name: 'color', values: ['black', 'purple', 'blue', 'orange', 'green', 'grey'] },
      { name: 'size', values: ['small', 'medium', 'large', 'one size'] },
    ],
    price: [10, 250],
    materials: ['tpe', 'ripstop nylon', 'neoprene', 'latex'],
  },
  {
    name: 'toys and games',
    types: ['building blocks', 'board game', 'jigsaw puzzle', 'plush toy', 'remote control car', 'art kit'],
    attributes: [
      'for ages 3 and up',
      'educational',
      'non toxic',
      'battery operated',
      'family game',
      'gift box',
      'easy to assemble',
      'for ages 8 and up',
      'stem learning',
      'travel friendly',
    ],
    options: [
      { name: 'color', values: ['multicolor', 'red', 'blue', 'pink', 'yellow'] },
      { name: 'size', values: ['100 pieces', '500 pieces', '1000 pieces', 'standard', 'deluxe'] },
    ],
    price: [8, 90],
    materials: ['wood', 'abs plastic', 'cardboard', 'polyester fiber'],
  },
];

/** Attributes no product has together (a shirt is not both slim fit and relaxed fit). */
export const EXCLUSIVE_ATTRIBUTES: readonly (readonly string[])[] = [
  ['slim fit', 'relaxed fit', 'loose fit'],
  ['long sleeve', 'short sleeve'],
  ['lace up', 'slip on'],
  ['for small dogs', 'for large dogs'],
  ['for ages 3 and up', 'for ages 8 and up'],
];

/** Syllables for brand names (brands are words BM25 can match, and are never English). */
export const BRAND_SYLLABLES = [
  'ka',
  'lo',
  'vi',
  'mor',
  'zen',
  'tri',
  'qua',
  'bel',
  'dro',
  'sy',
  'nex',
  'pal',
  'ru',
  'ver',
  'ton',
  'ela',
  'gri',
  'fo',
  'hal',
  'ixo',
];

/** Words a review may use (reviews are flavour text; no reward depends on them). */
export const REVIEW_WORDS = [
  'great value',
  'as described',
  'arrived quickly',
  'good quality',
  'fits well',
  'would buy again',
  'works as expected',
  'nice packaging',
];
